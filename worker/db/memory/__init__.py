"""An in-memory database for unit tests.

Like procrastinate's ``InMemoryConnector``, ``InMemoryDatabase`` stands
in for ``worker.db.session.Database``: its ``session()`` and ``reader()``
hand out in-memory sessions and its ``repositories`` expose the
repository contract (``worker.db.interfaces``: same names as the SQL
repositories, session first, same results), working on dicts of records
with the models' columns. The API's and operator commands' queries
(``worker.db.queries``) are not here: those paths run on a real
database. Code
that takes its repositories from the database it was given
(``database.repositories``) runs on it unchanged.

Transactions are serialized by one lock and roll back on an exception;
that serialization is also all that ``orders.lock_live`` needs here. The
primary and foreign keys of orders, steps and retry rows are checked
(``DBDuplicateEntry``, ``DBReferenceError``). The fake does not model
isolation beyond that serialization, row or gap locks, deadlocks, the
session's identity map (every read returns fresh copies; changing one
writes nothing), nor MySQL's case-insensitive string comparisons. Retry
ids only grow, as on every backend. A transaction is stricter than
SQLite's: after a database error every statement in it fails, as on
PostgreSQL, until it is rolled back.

``tests/functional/repositories/`` holds it to the SQL repositories'
behaviour on every backend.

One module per aggregate (``locks``, ``orders``, ``steps``,
``retry_tasks``, ``history``, ``services``, ``notifications``, ``purge``,
``resources``, ``schedules``, ``signals``, ``pauses``),
as in ``worker.db``; ``base`` holds the store, its sessions and the
records, ``recovery`` the retry daemon's reads of the steps.
"""

from worker.db.memory import base
from worker.db.memory import history
from worker.db.memory import locks
from worker.db.memory import notifications
from worker.db.memory import orders
from worker.db.memory import pauses
from worker.db.memory import purge
from worker.db.memory import quotas
from worker.db.memory import resources
from worker.db.memory import retry_tasks
from worker.db.memory import schedules
from worker.db.memory import services
from worker.db.memory import signals
from worker.db.memory import steps
from worker.db import repositories

InMemorySession = base.InMemorySession


class InMemoryDatabase:
    """A stand-in for ``worker.db.session.Database`` kept in memory."""

    engine = None

    def __init__(self) -> None:
        store = self._store = base.Store()
        self.repositories = repositories.Repositories(
            locks=locks.InMemoryLocks(store),
            orders=orders.InMemoryOrders(store),
            steps=steps.InMemorySteps(store),
            retry_tasks=retry_tasks.InMemoryRetryTasks(store),
            history=history.InMemoryHistory(store),
            services=services.InMemoryServices(store),
            notifications=notifications.InMemoryNotifications(store),
            purge=purge.InMemoryPurge(store),
            resources=resources.InMemoryResources(store),
            schedules=schedules.InMemorySchedules(store),
            quotas=quotas.InMemoryQuotas(store),
            signals=signals.InMemorySignals(store),
            pauses=pauses.InMemoryPauses(store))

    def session(self) -> base.InMemorySession:
        """Return a new read-write session."""
        return base.InMemorySession(self._store)

    def reader(self) -> base.InMemorySession:
        """Return a new session that refuses writes."""
        return base.InMemorySession(self._store, read_only=True)

    def dispose(self) -> None:
        """Do nothing: there are no connections."""
