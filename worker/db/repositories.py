"""The repositories as one value, so that a unit of work can be given
another implementation of them.

Each aggregate's repository is a module of functions that take the
session first (``locks``, ``orders``, ``steps``, ``retry_tasks``,
``history``, ``services``, ``notifications``, ``purge``,
``resources``, ``schedules``, ``signals``, ``pauses``). A
database hands out the repositories that work on its own sessions: a
``worker.db.session.Database`` these SQL ones, the in-memory database of
``worker.db.memory`` its in-memory ones. Code that runs units of work
reads them from the database it was given (``database.repositories``),
so sessions and repositories of two kinds are never mixed.

Each field is typed with its aggregate's protocol
(``worker.db.interfaces``): mypy checks the SQL modules where ``SQL`` is
built here, and the fake's repositories where ``InMemoryDatabase``
builds its own, against the same protocols.
"""

import contextlib
import dataclasses
import types
import typing

from worker.db import history
from worker.db import interfaces
from worker.db import locks
from worker.db import notifications
from worker.db import orders
from worker.db import pauses
from worker.db import purge
from worker.db import quotas
from worker.db import resources
from worker.db import retry_tasks
from worker.db import schedules
from worker.db import services
from worker.db import signals
from worker.db import steps


@dataclasses.dataclass(frozen=True)
class Repositories:
    """One repository per aggregate: a module of functions, or an object
    of methods with the same signatures."""

    locks: interfaces.Locks
    orders: interfaces.Orders
    steps: interfaces.Steps
    retry_tasks: interfaces.RetryTasks
    history: interfaces.History
    services: interfaces.Services
    notifications: interfaces.Notifications
    purge: interfaces.Purge
    resources: interfaces.Resources
    schedules: interfaces.Schedules
    quotas: interfaces.Quotas
    signals: interfaces.Signals
    pauses: interfaces.Pauses


SQL = Repositories(locks=locks, orders=orders, steps=steps,
                   retry_tasks=retry_tasks, history=history,
                   services=services, notifications=notifications,
                   purge=purge, resources=resources,
                   schedules=schedules, quotas=quotas, signals=signals,
                   pauses=pauses)


class Session(typing.Protocol):
    """What a unit of work uses of a session.

    A SQLAlchemy ``orm.Session`` or a
    ``worker.db.memory.base.InMemorySession``.
    """

    def __enter__(self) -> typing.Self:
        ...

    def __exit__(self, exc_type: type[BaseException] | None,
                 exc: BaseException | None,
                 traceback: types.TracebackType | None) -> object:
        ...

    def begin(self) -> contextlib.AbstractContextManager[object]:
        """Open a transaction, committed at the end of the block."""
        ...


class Database(typing.Protocol):
    """What a unit of work uses of a database.

    A ``worker.db.session.Database`` or a
    ``worker.db.memory.InMemoryDatabase``.
    """

    @property
    def repositories(self) -> Repositories:
        """The repositories that work on this database's sessions."""
        ...

    def session(self) -> Session:
        """A new session for transactions that may write."""
        ...

    def reader(self) -> Session:
        """A new session for transactions that only read."""
        ...
