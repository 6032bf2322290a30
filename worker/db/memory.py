"""An in-memory database for unit tests.

Like procrastinate's ``InMemoryConnector``, ``InMemoryDatabase`` stands
in for ``worker.db.session.Database``: its ``session()`` and ``reader()``
hand out in-memory sessions and its ``repositories`` expose every
function of the SQL repositories (same names, session first, same
results), working on dicts of records with the models' columns. Code
that takes its repositories from the database it was given
(``database.repositories``) runs on it unchanged.

Transactions are serialized by one lock and roll back on an exception.
The fake does not model isolation beyond that serialization, row or
gap locks, deadlocks, the session's identity map (every read returns
fresh copies; changing one writes nothing), MySQL's case-insensitive
string comparisons, nor SQLite's reuse of the highest retry id (ids here
only grow, as on PostgreSQL and MariaDB). A transaction is stricter
than SQLite's: after a database error every statement in it fails, as
on PostgreSQL, until it is rolled back.

``tests/functional/test_memory_repositories.py`` holds it to the SQL
repositories' behaviour on every backend.
"""

import collections
import contextlib
import copy
import dataclasses
import functools
import itertools
import json
import threading
import typing
import uuid

from oslo_db import exception as db_exc
from sqlalchemy import exc as sa_exc

from worker.db import models
from worker.db import repositories
from worker.db import retry_tasks


def _record(model):
    """A dataclass with the columns of ``model``, in their order."""
    return dataclasses.make_dataclass(
        model.__name__ + 'Record',
        [column.key for column in model.__table__.columns],
        namespace={'__doc__': 'A row of ``%s``.' % model.__tablename__,
                   '__module__': __name__})


OrderRecord = _record(models.Order)
RetryTaskRecord = _record(models.OrderRetryTask)
LockRecord = _record(models.EntityLock)
ServiceRecord = _record(models.Service)


class RecoveryRow(typing.NamedTuple):
    """A row of ``orders.lost_dispatches`` and ``orders.owned_by``."""

    id: str
    generation: int
    step: str | None
    attempt: int
    owner: str | None


_TABLES = ('orders', 'tasks', 'locks', 'services')


class _Store:
    """The tables, the id sequence and the lock serializing their use.

    Records in the tables are never changed in place, only replaced, so
    a shallow copy of each table is a snapshot.
    """

    def __init__(self):
        self.orders, self.tasks, self.locks, self.services = {}, {}, {}, {}
        self.task_ids = itertools.count(1)
        self.holder = None
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def hold(self):
        """Hold the store for this thread (re-entrant within it)."""
        if self.holder == threading.get_ident():
            yield
            return
        with self._lock:
            self.holder = threading.get_ident()
            try:
                yield
            finally:
                self.holder = None

    def snapshot(self):
        return {name: dict(getattr(self, name)) for name in _TABLES}

    def restore(self, snapshot):
        for name, rows in snapshot.items():
            table = getattr(self, name)
            table.clear()
            table.update(rows)


class InMemorySession:
    """A session on an ``InMemoryDatabase``; a context manager.

    ``begin()`` opens a transaction: it waits for the store, and undoes
    every write of the block if the block raises. A read outside
    ``begin()`` is allowed (and, like SQLAlchemy's autobegin, makes a
    later ``begin()`` on this session fail until it is closed); a write
    outside it, or through a ``reader()`` session, raises RuntimeError.
    """

    def __init__(self, store, read_only=False):
        self._store = store
        self._read_only = read_only
        self._in_transaction = self._autobegun = self._failed = False

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def close(self):
        """End the implicit transaction of reads outside ``begin()``."""
        self._autobegun = False

    @contextlib.contextmanager
    def begin(self):
        """Run the block as one transaction, rolled back if it raises."""
        if self._in_transaction or self._autobegun:
            raise sa_exc.InvalidRequestError(
                'A transaction is already begun on this Session.')
        if self._store.holder == threading.get_ident():
            raise RuntimeError('this thread already runs a transaction on '
                               'the in-memory database: it would wait for '
                               'itself')
        with self._store.hold():
            snapshot = self._store.snapshot()
            self._in_transaction = True
            try:
                yield
            except BaseException:
                self._store.restore(snapshot)
                raise
            finally:
                self._in_transaction = self._failed = False

    @contextlib.contextmanager
    def statement(self, store, write):
        """Run one repository call on ``store`` through this session."""
        if store is not self._store:
            raise TypeError('a session of another database')
        if write and self._read_only:
            raise RuntimeError('write through a reader() session')
        if write and not self._in_transaction:
            raise RuntimeError('write outside session.begin(): it would '
                               'be rolled back when the session closes')
        if self._failed:
            raise RuntimeError('the transaction failed on a database '
                               'error: roll it back')
        self._autobegun = not self._in_transaction
        with store.hold():
            try:
                yield
            except db_exc.DBError:
                self._failed = self._in_transaction
                raise


def _statement(write):
    def decorator(method):
        @functools.wraps(method)
        def wrapper(self, session, *args, **kwargs):
            if not isinstance(session, InMemorySession):
                raise TypeError('not an in-memory session: %r' % session)
            with session.statement(self._store, write):
                return method(self, session, *args, **kwargs)
        return wrapper
    return decorator


_reads = _statement(write=False)
_writes = _statement(write=True)


def _json(value):
    """``value`` as a JSON column gives it back."""
    return json.loads(json.dumps(value))


class _Repository:
    def __init__(self, store):
        self._store = store


class InMemoryLocks(_Repository):
    """``worker.db.locks`` on the in-memory store."""

    @_reads
    def get(self, session, entity):
        """Return the lock row of ``entity``, or None."""
        return copy.deepcopy(self._store.locks.get(entity))

    @_writes
    def insert(self, session, entity, host, token, now):
        """Take the lock; raises ``DBDuplicateEntry`` if it is held."""
        if entity in self._store.locks:
            raise db_exc.DBDuplicateEntry(columns=['entity_to_lock'])
        self._store.locks[entity] = LockRecord(
            entity_to_lock=entity, worker_host_name=host, owner_token=token,
            created_at=now)

    @_writes
    def renew(self, session, entity, token, now):
        """Extend our own lock; returns False if we no longer hold it."""
        lock = self._store.locks.get(entity)
        if lock is None or lock.owner_token != token:
            return False
        self._store.locks[entity] = dataclasses.replace(lock, created_at=now)
        return True

    @_writes
    def release(self, session, entity, token):
        """Delete our own lock; returns False if we no longer held it."""
        lock = self._store.locks.get(entity)
        if lock is None or lock.owner_token != token:
            return False
        del self._store.locks[entity]
        return True

    @_writes
    def force_release(self, session, entity):
        """Delete the lock of ``entity``; returns True if there was one."""
        return self._store.locks.pop(entity, None) is not None


_RELEASED = {'owner': None, 'claimed_at': None, 'dispatched_at': None}


class InMemoryOrders(_Repository):
    """``worker.db.orders`` on the in-memory store."""

    @_writes
    def create(self, session, order_type, meta, now):
        """Insert a PENDING order, dispatched at ``now``; returns it."""
        order = OrderRecord(
            id=str(uuid.uuid4()), type=order_type, status=models.PENDING,
            meta=_json(dict(meta or {})), error_reason=None, generation=0,
            step='process_type_order', attempt=0, owner=None,
            claimed_at=None, dispatched_at=now, created_at=now,
            updated_at=now)
        self._store.orders[order.id] = order
        # NOTE: SQLAlchemy returns the object as built, before JSON.
        return dataclasses.replace(order, meta=dict(meta or {}))

    @_reads
    def get(self, session, order_id):
        """Return the order with this id, or None."""
        return copy.deepcopy(self._store.orders.get(order_id))

    @_reads
    def get_many(self, session, order_ids):
        """Return ``{id: order}`` of those of ``order_ids`` that exist."""
        return {order_id: copy.deepcopy(self._store.orders[order_id])
                for order_id in order_ids or ()
                if order_id in self._store.orders}

    @_reads
    def list_orders(self, session, status=None, limit=None):
        """Return orders, oldest first, optionally only of ``status``."""
        found = sorted((order for order in self._store.orders.values()
                        if not status or order.status == status),
                       key=lambda order: (order.created_at, order.id))
        return copy.deepcopy(found[:limit or None])

    @_reads
    def count_by_status(self, session):
        """Return ``{status: count}`` over every order."""
        return dict(collections.Counter(
            order.status for order in self._store.orders.values()))

    def _fenced_update(self, order_id, token, now, **values):
        order = self._store.orders.get(order_id)
        if (order is None or order.generation != token or
                order.status != models.PENDING):
            return False
        self._store.orders[order_id] = dataclasses.replace(
            order, updated_at=now, **values)
        return True

    @_writes
    def claim(self, session, order_id, generation, now, owner):
        """Take the order for one step by moving its generation on."""
        return self._fenced_update(order_id, generation, now,
                                   generation=generation + 1, owner=owner,
                                   claimed_at=now, dispatched_at=None)

    @_writes
    def schedule_step(self, session, order_id, generation, now, step,
                      attempt):
        """Record the step the order waits for and its attempts."""
        return self._fenced_update(order_id, generation, now, step=step,
                                   attempt=attempt, **_RELEASED)

    @_writes
    def complete(self, session, order_id, generation, now, meta):
        """Move the order to ACTIVE, merging ``meta`` into its meta."""
        order = self._store.orders.get(order_id)
        merged = dict(order.meta or {}, **(meta or {})) if order else meta
        return self._fenced_update(order_id, generation, now,
                                   status=models.ACTIVE, step=None,
                                   meta=_json(merged), **_RELEASED)

    @_writes
    def fail(self, session, order_id, generation, now, reason):
        """Move the order to ERROR with ``reason``."""
        return self._fenced_update(order_id, generation, now,
                                   status=models.ERROR, step=None,
                                   error_reason=reason, **_RELEASED)

    @_writes
    def mark_dispatched(self, session, order_ids, now):
        """Record that unclaimed PENDING orders were cast at ``now``."""
        for order_id in order_ids or ():
            order = self._store.orders.get(order_id)
            if (order is not None and order.owner is None and
                    order.status == models.PENDING):
                self._store.orders[order_id] = dataclasses.replace(
                    order, dispatched_at=now)

    def _without_retry_row(self):
        waiting = {task.order_id for task in self._store.tasks.values()}
        return [order for order in self._store.orders.values()
                if order.id not in waiting]

    @staticmethod
    def _recovery(order):
        return RecoveryRow(order.id, order.generation, order.step,
                           order.attempt, order.owner)

    @_reads
    def lost_dispatches(self, session, dispatched_before, limit):
        """Orders cast before ``dispatched_before`` no worker took up."""
        found = sorted((order for order in self._without_retry_row()
                        if order.dispatched_at is not None and
                        order.dispatched_at < dispatched_before),
                       key=lambda order: order.dispatched_at)
        # As in SQL: the limit applies before owned rows are dropped.
        return [self._recovery(order) for order in found[:limit]
                if order.owner is None]

    @_reads
    def owners(self, session):
        """Return the distinct owners of claimed orders."""
        return {order.owner for order in self._store.orders.values()
                if order.owner is not None}

    @_reads
    def owned_by(self, session, dead_owners, limit):
        """Orders claimed by one of ``dead_owners``."""
        dead = set(dead_owners or ())
        found = [order for order in self._without_retry_row()
                 if order.owner in dead]
        return [self._recovery(order) for order in found[:limit]]

    @_writes
    def take_back(self, session, order_id, generation, now):
        """Take a lost order back: bump its token, no owner."""
        return self._fenced_update(order_id, generation, now,
                                   generation=generation + 1, **_RELEASED)

    @_writes
    def cancel(self, session, order_id, now, reason):
        """Move a PENDING order to ERROR whatever its token."""
        order = self._store.orders.get(order_id)
        if order is None or order.status != models.PENDING:
            return False
        self._store.orders[order_id] = dataclasses.replace(
            order, generation=order.generation + 1, status=models.ERROR,
            error_reason=reason, step=None, updated_at=now, **_RELEASED)
        return True


def _due_key(task):
    return (task.retry_at, task.id)


class InMemoryRetryTasks(_Repository):
    """``worker.db.retry_tasks`` on the in-memory store."""

    @_writes
    def add(self, session, order_id, retry_task, retry_at, args=(),
            kwargs=None, retry_count=0, now=None):
        """Insert a retry row for ``order_id``; returns it."""
        if order_id not in self._store.orders:
            raise db_exc.DBReferenceError(
                'order_retry_tasks', 'fk_order_retry_tasks_order_id_orders',
                'order_id', 'orders')
        task = RetryTaskRecord(
            id=next(self._store.task_ids), order_id=order_id,
            retry_task=retry_task, retry_at=retry_at,
            retry_args=json.dumps(list(args)),
            retry_kwargs=json.dumps(dict(kwargs or {})),
            retry_count=retry_count, parked=False, park_reason=None,
            created_at=now or retry_at)
        self._store.tasks[task.id] = task
        return copy.deepcopy(task)

    def _unparked(self):
        return [task for task in self._store.tasks.values()
                if not task.parked]

    @_reads
    def due(self, session, now, limit, after=None):
        """Up to ``limit`` unparked due rows by (retry_at, id), after it."""
        found = sorted((task for task in self._unparked()
                        if task.retry_at <= now and
                        (after is None or _due_key(task) > tuple(after))),
                       key=_due_key)
        return [retry_tasks.DueTask(
            task.id, task.order_id, task.retry_task, task.retry_at,
            task.retry_args, task.retry_kwargs, task.retry_count,
            task.order_id in self._store.orders) for task in found[:limit]]

    @_reads
    def any_due(self, session, now):
        """Return True if an unparked row is due at ``now``."""
        return any(task.retry_at <= now for task in self._unparked())

    @_reads
    def next_due_after(self, session, moment):
        """The earliest ``retry_at`` after ``moment`` of an unparked row."""
        return min((task.retry_at for task in self._unparked()
                    if task.retry_at > moment), default=None)

    @_reads
    def count_due(self, session, now):
        """Count the unparked rows due at ``now``."""
        return sum(task.retry_at <= now for task in self._unparked())

    @_writes
    def delete(self, session, task_ids):
        """Delete the rows with these ids; returns how many were."""
        return sum(self._store.tasks.pop(task_id, None) is not None
                   for task_id in set(task_ids or ()))

    @_writes
    def delete_for_order(self, session, order_id):
        """Delete every retry row of one order."""
        self.delete(session, [task.id for task in self._store.tasks.values()
                              if task.order_id == order_id])

    def _as_read(self, rows):
        read = {(row.id, row.order_id, row.retry_at) for row in rows}
        return [task for task in self._store.tasks.values()
                if (task.id, task.order_id, task.retry_at) in read]

    @_writes
    def delete_as_read(self, session, rows):
        """Delete rows (``DueTask``) still as read; their order ids."""
        deleted = self._as_read(rows or ())
        for task in deleted:
            del self._store.tasks[task.id]
        return {task.order_id for task in deleted}

    @_writes
    def park(self, session, row, reason):
        """Set a row (as it was read) aside."""
        for task in self._as_read([row]):
            self._store.tasks[task.id] = dataclasses.replace(
                task, parked=True, park_reason=reason)

    @_reads
    def get(self, session, task_id):
        """Return the retry row with this id, or None."""
        return copy.deepcopy(self._store.tasks.get(task_id))

    @_writes
    def requeue(self, session, task_id, now):
        """Make a row due at ``now``, unparked; False if there is none."""
        task = self._store.tasks.get(task_id)
        if task is None:
            return False
        self._store.tasks[task_id] = dataclasses.replace(
            task, retry_at=now, parked=False, park_reason=None)
        return True

    @_reads
    def list_tasks(self, session, parked=None, order_id=None):
        """Return retry rows by retry_at, filtered on the arguments."""
        return copy.deepcopy(sorted(
            (task for task in self._store.tasks.values()
             if (parked is None or task.parked == parked) and
             (not order_id or task.order_id == order_id)),
            key=_due_key))


class InMemoryServices(_Repository):
    """``worker.db.services`` on the in-memory store."""

    @_writes
    def heartbeat(self, session, name, kind, host, pid, now):
        """Record that ``name`` is alive at ``now`` (insert if missing)."""
        service = self._store.services.get(name)
        self._store.services[name] = (
            dataclasses.replace(service, heartbeat_at=now) if service else
            ServiceRecord(name=name, kind=kind, host=host, pid=pid,
                          started_at=now, heartbeat_at=now,
                          last_pass_at=None, next_pass_at=None))

    @_writes
    def record_pass(self, session, name, last_pass_at, next_pass_at):
        """Record when a retry daemon passed and will pass next."""
        service = self._store.services.get(name)
        if service is not None:
            self._store.services[name] = dataclasses.replace(
                service, last_pass_at=last_pass_at,
                next_pass_at=next_pass_at)

    @_writes
    def remove(self, session, name):
        """Delete the row of ``name``."""
        self._store.services.pop(name, None)

    @_reads
    def live_names(self, session, alive_since, kind=None):
        """Names (of ``kind``) whose heartbeat is not before it."""
        return {service.name for service in self._store.services.values()
                if service.heartbeat_at >= alive_since and
                (not kind or service.kind == kind)}

    @_reads
    def any_dead(self, session, alive_since):
        """Return True if a heartbeat is before ``alive_since``."""
        return any(service.heartbeat_at < alive_since
                   for service in self._store.services.values())

    @_writes
    def delete_dead(self, session, alive_since):
        """Delete rows with a heartbeat before it; returns their names."""
        names = sorted(name for name, service in self._store.services.items()
                       if service.heartbeat_at < alive_since)
        for name in names:
            del self._store.services[name]
        return names

    @_reads
    def list_services(self, session, kind=None):
        """Return the service rows (of ``kind``), by kind then name."""
        return copy.deepcopy(sorted(
            (service for service in self._store.services.values()
             if not kind or service.kind == kind),
            key=lambda service: (service.kind, service.name)))


class InMemoryDatabase:
    """A stand-in for ``worker.db.session.Database`` kept in memory."""

    engine = None

    def __init__(self):
        store = self._store = _Store()
        self.repositories = repositories.Repositories(
            locks=InMemoryLocks(store), orders=InMemoryOrders(store),
            retry_tasks=InMemoryRetryTasks(store),
            services=InMemoryServices(store))

    def session(self):
        """Return a new read-write session."""
        return InMemorySession(self._store)

    def reader(self):
        """Return a new session that refuses writes."""
        return InMemorySession(self._store, read_only=True)

    def dispose(self):
        """Do nothing: there are no connections."""
