"""The repositories as one value, so that a unit of work can be given
another implementation of them.

Each aggregate's repository is a module of functions that take the
session first (``locks``, ``orders``, ``retry_tasks``, ``services``). A
database hands out the repositories that work on its own sessions: a
``worker.db.session.Database`` these SQL ones, the in-memory database of
``worker.db.memory`` its in-memory ones. Code that runs units of work
reads them from the database it was given (``database.repositories``),
so sessions and repositories of two kinds are never mixed.
"""

import dataclasses
import types

from worker.db import locks
from worker.db import orders
from worker.db import retry_tasks
from worker.db import services


@dataclasses.dataclass(frozen=True)
class Repositories:
    """One repository per aggregate, each a module-like namespace."""

    locks: types.ModuleType
    orders: types.ModuleType
    retry_tasks: types.ModuleType
    services: types.ModuleType


SQL = Repositories(locks=locks, orders=orders, retry_tasks=retry_tasks,
                   services=services)
