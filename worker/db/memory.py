"""An in-memory database for unit tests.

Like procrastinate's ``InMemoryConnector``, ``InMemoryDatabase`` stands
in for ``worker.db.session.Database``: its ``session()`` and ``reader()``
hand out in-memory sessions and its ``repositories`` expose every
function of the SQL repositories (same names, session first, same
results), working on dicts of records with the models' columns. Code
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
import uuid

from oslo_db import exception as db_exc
from oslo_utils import timeutils
from sqlalchemy import exc as sa_exc

from worker.db import models
from worker.db import repositories
from worker.db import retry_tasks
from worker.db import steps


def _record(model):
    """A dataclass with the columns of ``model``, in their order."""
    return dataclasses.make_dataclass(
        model.__name__ + 'Record',
        [column.key for column in model.__table__.columns],
        namespace={'__doc__': 'A row of ``%s``.' % model.__tablename__,
                   '__module__': __name__})


OrderRecord = _record(models.Order)
StepRecord = _record(models.OrderStep)
RetryTaskRecord = _record(models.OrderRetryTask)
LockRecord = _record(models.EntityLock)
UrlRecord = _record(models.NotificationUrl)
EventRecord = _record(models.NotificationEvent)
ServiceRecord = _record(models.Service)


_TABLES = ('orders', 'steps', 'tasks', 'locks', 'services', 'urls',
           'events')


class _Store:
    """The tables, the id sequence and the lock serializing their use.

    Records in the tables are never changed in place, only replaced, so
    a shallow copy of each table is a snapshot.
    """

    def __init__(self):
        self.orders, self.tasks, self.locks, self.services = {}, {}, {}, {}
        #: ``{(order_id, name): StepRecord}``.
        self.steps = {}
        self.task_ids = itertools.count(1)
        #: ``{id: UrlRecord}`` and ``{(order_id, sequence): EventRecord}``.
        self.urls, self.events = {}, {}
        self.url_ids = itertools.count(1)
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


def _missing_order(table):
    """The error of a row whose order does not exist (its foreign key)."""
    return db_exc.DBReferenceError(
        table, 'fk_%s_order_id_orders' % table, 'order_id', 'orders')


def _insert_steps(store, order_id, names, roots, now):
    """``steps.create`` on ``store``, with the keys' integrity checks."""
    if order_id not in store.orders:
        raise _missing_order('order_steps')
    for name in names:
        if (order_id, name) in store.steps:
            raise db_exc.DBDuplicateEntry(columns=['order_id', 'name'])
    for name in names:
        root = name in roots
        store.steps[order_id, name] = StepRecord(
            order_id=order_id, name=name,
            status=models.STEP_PENDING if root else models.STEP_WAITING,
            generation=0, attempt=0, failures=0, polls=0, owner=None,
            claimed_at=None, lease_expires_at=None,
            dispatched_at=now if root else None, started_at=None,
            finished_at=None, last_error=None, output=None, updated_at=now)


class InMemoryOrders(_Repository):
    """``worker.db.orders`` on the in-memory store."""

    @_writes
    def create(self, session, workflow, meta, now, priority=0):
        """Insert a PENDING order of ``workflow``'s type, and its steps."""
        order = OrderRecord(
            id=str(uuid.uuid4()), type=workflow.type_name,
            status=models.PENDING, meta=_json(dict(meta or {})),
            error_reason=None, priority=models.check_priority(priority),
            created_at=now, updated_at=now)
        self._store.orders[order.id] = order
        _insert_steps(self._store, order.id, workflow.names,
                      set(workflow.roots()), now)
        # NOTE: SQLAlchemy returns the object as built, before JSON.
        return dataclasses.replace(order, meta=dict(meta or {}))

    @_reads
    def get(self, session, order_id):
        """Return the order with this id, or None."""
        return copy.deepcopy(self._store.orders.get(order_id))

    def with_steps(self, session, order_id):
        """Return ``(order, {name: step})``; ``(None, {})`` if none."""
        return self.with_steps_many(session, [order_id]).get(
            order_id, (None, {}))

    @_reads
    def with_steps_many(self, session, order_ids):
        """Return ``{order_id: (order, {name: step})}`` of those that
        exist."""
        found = {order_id: (copy.deepcopy(self._store.orders[order_id]), {})
                 for order_id in order_ids
                 if order_id in self._store.orders}
        for step in sorted(self._store.steps.values(), key=_step_key):
            if step.order_id in found:
                found[step.order_id][1][step.name] = copy.deepcopy(step)
        return found

    @_reads
    def priorities(self, session, order_ids):
        """Return ``{id: priority}`` of those of ``order_ids`` that exist.
        """
        return {order_id: self._store.orders[order_id].priority
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

    @_reads
    def count_unfinished_by_status(self, session):
        """Return ``{status: count}`` of the orders not in a terminal
        status."""
        return dict(collections.Counter(
            order.status for order in self._store.orders.values()
            if order.status in models.UNFINISHED_STATUSES))

    @_reads
    def count_unfinished_by_type(self, session):
        """Return ``{type: count}`` of the orders not in a terminal status.
        """
        return dict(collections.Counter(
            order.type for order in self._store.orders.values()
            if order.status not in models.TERMINAL_STATUSES))

    @_writes
    def lock_live(self, session, order_id, now):
        """Lock a PENDING or CANCELLING order; False if it is not live.

        The store's one lock already serializes transactions: this only
        touches ``updated_at``, as the SQL update does.
        """
        order = self._store.orders.get(order_id)
        if order is None or order.status not in (models.PENDING,
                                                 models.CANCELLING):
            return False
        self._store.orders[order_id] = dataclasses.replace(
            order, updated_at=now)
        return True

    def _move(self, order_id, now, source, **values):
        order = self._store.orders.get(order_id)
        if order is None or order.status != source:
            return False
        self._store.orders[order_id] = dataclasses.replace(
            order, updated_at=now, **values)
        return True

    @_writes
    def complete(self, session, order_id, now, meta):
        """Move a PENDING order to ACTIVE with ``meta`` as its meta."""
        return self._move(order_id, now, models.PENDING,
                          status=models.ACTIVE, meta=_json(dict(meta or {})))

    def complete_many(self, session, completions, now):
        """Complete several orders; how many moved to ACTIVE."""
        return sum(self.complete(session, order_id, now, meta)
                   for order_id, meta in completions)

    @_writes
    def fail(self, session, order_id, now, reason):
        """Move a PENDING order to ERROR with ``reason``."""
        return self._move(order_id, now, models.PENDING,
                          status=models.ERROR, error_reason=reason)

    @_writes
    def cancel(self, session, order_id, now, reason, compensating):
        """Move a PENDING order to CANCELLING or CANCELLED."""
        return self._move(order_id, now, models.PENDING,
                          status=(models.CANCELLING if compensating
                                  else models.CANCELLED),
                          error_reason=reason)

    @_writes
    def end_cancel(self, session, order_id, now, failure=None):
        """Move a CANCELLING order to CANCELLED; ``failure`` appended."""
        values = {'status': models.CANCELLED}
        if failure is not None:
            order = self._store.orders.get(order_id)
            values['error_reason'] = '%s; %s' % (
                order.error_reason if order else 'cancelled', failure)
        return self._move(order_id, now, models.CANCELLING, **values)


# A run's result releases the step: no owner, not in flight.
_RELEASED = {'owner': None, 'claimed_at': None, 'lease_expires_at': None,
             'dispatched_at': None}
_OPEN = (models.STEP_WAITING, models.STEP_PENDING)


def _step_key(step):
    return (step.order_id, step.name)


class InMemorySteps(_Repository):
    """``worker.db.steps`` on the in-memory store."""

    @_writes
    def create(self, session, order_id, names, roots, now):
        """Insert the steps ``names``; the ``roots`` PENDING, dispatched."""
        _insert_steps(self._store, order_id, names, roots, now)

    @_reads
    def for_orders(self, session, order_ids):
        """Return ``{order_id: {name: step}}`` of these orders."""
        found = {order_id: {} for order_id in order_ids}
        for step in sorted(self._store.steps.values(), key=_step_key):
            if step.order_id in found:
                found[step.order_id][step.name] = copy.deepcopy(step)
        return found

    def for_order(self, session, order_id):
        """Return ``{name: step}`` of one order."""
        return self.for_orders(session, [order_id])[order_id]

    def _fenced_update(self, order_id, name, token, now, **values):
        step = self._store.steps.get((order_id, name))
        if (step is None or step.generation != token or
                step.status != models.STEP_PENDING):
            return False
        self._store.steps[order_id, name] = dataclasses.replace(
            step, updated_at=now, **values)
        return True

    @_writes
    def claim(self, session, order_id, name, generation, now, owner,
              lease_until):
        """Take the step for one run by moving its generation forward."""
        return self._claim(order_id, name, generation, now, owner,
                           lease_until)

    def _claim(self, order_id, name, generation, now, owner, lease_until):
        step = self._store.steps.get((order_id, name))
        return step is not None and self._fenced_update(
            order_id, name, generation, now, generation=generation + 1,
            owner=owner, claimed_at=now, lease_expires_at=lease_until,
            dispatched_at=None, attempt=step.attempt + 1,
            started_at=step.started_at or now)

    @_writes
    def claim_many(self, session, claims, now, owner):
        """Claim several steps; the ``(order_id, name)`` claimed."""
        claimed = set()
        for order_id, name, generation, lease_until in claims:
            if self._claim(order_id, name, generation, now, owner,
                           lease_until):
                claimed.add((order_id, name))
        return claimed

    @_writes
    def retry(self, session, order_id, name, token, now, failures, polls,
              last_error=None):
        """Release the step for a later run (its retry row is the caller's).
        """
        return self._fenced_update(order_id, name, token, now,
                                   failures=failures, polls=polls,
                                   last_error=last_error, **_RELEASED)

    def retry_many(self, session, retries, now):
        """Release several steps; how many were."""
        return sum(self.retry(session, order_id, name, token, now, failures,
                              polls, last_error)
                   for order_id, name, token, failures, polls, last_error
                   in retries)

    @_writes
    def finish(self, session, order_id, name, token, now, status,
               output=None, last_error=None):
        """End the step DONE (with its ``output``) or FAILED."""
        values = dict(status=status, finished_at=now, **_RELEASED)
        if output is not None:
            values['output'] = _json(output)
        if last_error is not None:
            values['last_error'] = last_error
        return self._fenced_update(order_id, name, token, now, **values)

    def finish_many(self, session, finishes, now):
        """End several steps; how many were."""
        return sum(self.finish(session, order_id, name, token, now, status,
                               output, last_error)
                   for order_id, name, token, status, output, last_error
                   in finishes)

    @_writes
    def start(self, session, order_id, names, now, dispatched):
        """Make WAITING steps PENDING; ``dispatched``: cast at ``now``."""
        for name in names or ():
            step = self._store.steps.get((order_id, name))
            if step is not None and step.status == models.STEP_WAITING:
                self._store.steps[order_id, name] = dataclasses.replace(
                    step, status=models.STEP_PENDING, updated_at=now,
                    dispatched_at=now if dispatched else None)

    def start_many(self, session, starts, now):
        """Start the steps of several orders."""
        for order_id, names, dispatched in starts:
            self.start(session, order_id, names, now, dispatched)

    @_writes
    def revoke_open(self, session, order_id, now, reason):
        """Cancel every WAITING or PENDING step; returns their names."""
        open_steps = sorted(
            (step for step in self._store.steps.values()
             if step.order_id == order_id and step.status in _OPEN and
             models.url_id_of(step.name) is None),
            key=_step_key)
        for step in open_steps:
            self._store.steps[_step_key(step)] = dataclasses.replace(
                step, generation=step.generation + 1,
                status=models.STEP_CANCELLED, last_error=reason,
                finished_at=now, updated_at=now, **_RELEASED)
        return [step.name for step in open_steps]

    @_writes
    def record_delivery(self, session, order_id, name, token, now, status,
                        delivered, failures, last_error=None,
                        dispatched=False):
        """Write a delivery's run."""
        values = dict(status=status, failures=failures,
                      last_error=last_error,
                      output={'delivered_sequence': delivered}, **_RELEASED)
        if dispatched:
            values['dispatched_at'] = now
        if status == models.STEP_DONE:
            values['finished_at'] = now
        return self._fenced_update(order_id, name, token, now, **values)

    @_writes
    def add(self, session, order_id, name, now):
        """Insert one more step, PENDING and dispatched at ``now``."""
        _insert_steps(self._store, order_id, [name], {name}, now)

    @_writes
    def mark_dispatched(self, session, keys, now):
        """Record that unclaimed PENDING steps were cast at ``now``."""
        for key in keys or ():
            step = self._store.steps.get(tuple(key))
            if (step is not None and step.owner is None and
                    step.status == models.STEP_PENDING):
                self._store.steps[tuple(key)] = dataclasses.replace(
                    step, dispatched_at=now)

    def _without_retry_row(self):
        waiting = {(task.order_id, task.retry_task)
                   for task in self._store.tasks.values()}
        return [step for step in self._store.steps.values()
                if _step_key(step) not in waiting]

    @staticmethod
    def _recovery(step):
        return steps.RecoveryRow(step.order_id, step.name, step.generation,
                                 step.failures, step.owner)

    @_reads
    def lost_dispatches(self, session, dispatched_before, limit):
        """Steps cast before ``dispatched_before`` no worker took up."""
        found = sorted((step for step in self._without_retry_row()
                        if step.dispatched_at is not None and
                        step.dispatched_at < dispatched_before),
                       key=lambda step: (step.dispatched_at,
                                         _step_key(step)))
        # As in SQL: the limit applies before claimed steps are dropped.
        return [self._recovery(step) for step in found[:limit]
                if step.owner is None]

    @_reads
    def owners(self, session):
        """Return the distinct owners of claimed steps."""
        return {step.owner for step in self._store.steps.values()
                if step.owner is not None}

    @_reads
    def owned_by(self, session, dead_owners, limit):
        """Steps claimed by one of ``dead_owners``."""
        dead = set(dead_owners or ())
        found = sorted((step for step in self._without_retry_row()
                        if step.owner in dead), key=_step_key)
        return [self._recovery(step) for step in found[:limit]]

    @_reads
    def expired_leases(self, session, now, limit):
        """Claimed steps whose lease ended before ``now``."""
        found = sorted((step for step in self._store.steps.values()
                        if step.lease_expires_at is not None and
                        step.lease_expires_at < now),
                       key=lambda step: (step.lease_expires_at,
                                         _step_key(step)))
        return [self._recovery(step) for step in found[:limit]]

    @_writes
    def take_back(self, session, order_id, name, generation, now,
                  failed=None):
        """Take a lost step back: bump its token, no owner."""
        step = self._store.steps.get((order_id, name))
        values = dict(generation=generation + 1, **_RELEASED)
        if failed and step is not None:
            values.update(failures=step.failures + 1, last_error=failed)
        return self._fenced_update(order_id, name, generation, now,
                                   **values)


def _due_key(task):
    """Where ``due`` puts a row: priority descending, retry_at, id."""
    return (-task.priority, task.retry_at, task.id)


class InMemoryRetryTasks(_Repository):
    """``worker.db.retry_tasks`` on the in-memory store."""

    @_writes
    def add(self, session, order_id, retry_task, retry_at, args=(),
            kwargs=None, retry_count=0, now=None, priority=0):
        """Insert a retry row for ``order_id``; returns its id."""
        models.check_priority(priority)
        if order_id not in self._store.orders:
            raise _missing_order('order_retry_tasks')
        task = RetryTaskRecord(
            id=next(self._store.task_ids), order_id=order_id,
            retry_task=retry_task, retry_at=retry_at,
            retry_args=json.dumps(list(args)),
            retry_kwargs=json.dumps(dict(kwargs or {})),
            retry_count=retry_count, priority=priority, parked=False,
            park_reason=None, created_at=now or retry_at)
        self._store.tasks[task.id] = task
        return task.id

    def add_many(self, session, rows):
        """Insert several retry rows (dicts of ``add``'s arguments)."""
        for arguments in rows:
            self.add(session, **arguments)

    def _unparked(self):
        return [task for task in self._store.tasks.values()
                if not task.parked]

    @_reads
    def due(self, session, now, limit, after=None):
        """Up to ``limit`` unparked due rows, highest priority first, then
        by (retry_at, id); after the row whose ``DueTask.key`` is
        ``after``."""
        start = None
        if after is not None:
            priority, retry_at, task_id = after
            start = (-priority, retry_at, task_id)
        found = sorted((task for task in self._unparked()
                        if task.retry_at <= now and
                        (start is None or _due_key(task) > start)),
                       key=_due_key)
        return [retry_tasks.DueTask(
            task.id, task.order_id, task.retry_task, task.retry_at,
            task.retry_args, task.retry_kwargs, task.retry_count,
            task.priority,
            (task.order_id, task.retry_task) in self._store.steps)
            for task in found[:limit]]

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

    @_reads
    def count_later(self, session, now):
        """Count the unparked rows due after ``now``."""
        return sum(task.retry_at > now for task in self._unparked())

    @_reads
    def count_parked(self, session):
        """Count the parked rows."""
        return sum(task.parked for task in self._store.tasks.values())

    @_writes
    def delete(self, session, task_ids):
        """Delete the rows with these ids; returns how many were."""
        return sum(self._store.tasks.pop(task_id, None) is not None
                   for task_id in set(task_ids or ()))

    @_writes
    def delete_for_order(self, session, order_id, step=None):
        """Delete every retry row of one order, or of one of its steps."""
        self.delete(session, [
            task.id for task in self._store.tasks.values()
            if task.order_id == order_id and
            (task.retry_task == step if step is not None else
             models.url_id_of(task.retry_task) is None)])

    def delete_for_steps(self, session, keys):
        """Delete the retry rows of these ``(order_id, step)``."""
        for order_id, step in keys:
            self.delete_for_order(session, order_id, step)

    @_writes
    def delete_as_read(self, session, rows):
        """Delete rows (``DueTask``) by id; the (order, step) of those
        deleted."""
        deleted = [self._store.tasks.pop(row.id) for row in rows or ()
                   if row.id in self._store.tasks]
        return {(task.order_id, task.retry_task) for task in deleted}

    @_writes
    def park(self, session, row, reason):
        """Set a row (as it was read, by id) aside."""
        task = self._store.tasks.get(row.id)
        if task is not None:
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
            key=lambda task: (task.retry_at, task.id)))


class InMemoryServices(_Repository):
    """``worker.db.services`` on the in-memory store."""

    @_writes
    def heartbeat(self, session, name, kind, host, pid, now,
                  clock_offset=None):
        """Record that ``name`` is alive at ``now`` (insert if missing)."""
        service = self._store.services.get(name)
        self._store.services[name] = (
            dataclasses.replace(service, heartbeat_at=now,
                                clock_offset=clock_offset) if service else
            ServiceRecord(name=name, kind=kind, host=host, pid=pid,
                          started_at=now, heartbeat_at=now,
                          last_pass_at=None, next_pass_at=None,
                          clock_offset=clock_offset))

    @_reads
    def database_time(self, session):
        """The store's clock: this host's UTC time."""
        return timeutils.utcnow()

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


class InMemoryNotifications(_Repository):
    """``worker.db.notifications`` on the in-memory store."""

    def _url_by_hash(self, url):
        digest = models.url_hash(url)
        for row in self._store.urls.values():
            if row.url_hash == digest:
                return row
        return None

    @_reads
    def find_url(self, session, url):
        """The URL's row, or None."""
        return copy.deepcopy(self._url_by_hash(url))

    @_writes
    def add_url(self, session, url, now):
        """Insert ``url``, available; returns its row."""
        if self._url_by_hash(url) is not None:
            raise db_exc.DBDuplicateEntry(columns=['url_hash'])
        row = UrlRecord(id=next(self._store.url_ids), url=url,
                        url_hash=models.url_hash(url),
                        available=True, failures=0, last_error=None,
                        last_failure_at=None, disabled_at=None,
                        created_at=now, updated_at=now)
        self._store.urls[row.id] = row
        return copy.deepcopy(row)

    @_reads
    def get_url(self, session, url_id):
        """The URL's row, or None."""
        return copy.deepcopy(self._store.urls.get(url_id))

    @_reads
    def list_urls(self, session):
        """Every URL, by id."""
        return copy.deepcopy(sorted(self._store.urls.values(),
                                    key=lambda row: row.id))

    def _update_url(self, url_id, **values):
        row = self._store.urls.get(url_id)
        if row is not None:
            self._store.urls[url_id] = dataclasses.replace(row, **values)
        return row

    @_writes
    def url_failed(self, session, url_id, now, error, disable):
        """Count a failed request; ``disable``: make it unavailable."""
        row = self._store.urls.get(url_id)
        if row is None:
            return
        values = dict(failures=row.failures + 1, last_error=error,
                      last_failure_at=now, updated_at=now)
        if disable:
            values.update(available=False,
                          disabled_at=row.disabled_at or now)
        self._update_url(url_id, **values)

    @_writes
    def url_succeeded(self, session, url_id):
        """A request was acknowledged: its failures start again."""
        row = self._store.urls.get(url_id)
        if row is not None and row.failures > 0:
            self._update_url(url_id, failures=0)

    @_writes
    def hold_url(self, session, url_id, now):
        """Touch the URL's row; True if it is available."""
        row = self._update_url(url_id, updated_at=now)
        return bool(row and row.available)

    @_writes
    def enable_url(self, session, url_id, now):
        """Make the URL available again."""
        self._update_url(url_id, available=True, failures=0,
                         disabled_at=None, updated_at=now)

    @_reads
    def count_unavailable_urls(self, session):
        """How many URLs are unavailable."""
        return sum(not row.available for row in self._store.urls.values())

    @_writes
    def lock_order(self, session, order_id, now):
        """Touch the order's ``updated_at``, as the SQL update does
        (transactions are serialized anyway)."""
        order = self._store.orders.get(order_id)
        if order is not None:
            self._store.orders[order_id] = dataclasses.replace(
                order, updated_at=now)

    @_reads
    def deliveries(self, session, order_id):
        """``{name: (status, generation)}`` of the order's deliveries."""
        return {step.name: (step.status, step.generation)
                for step in self._store.steps.values()
                if step.order_id == order_id and
                models.url_id_of(step.name) is not None}

    @_writes
    def add_events(self, session, order_id, events, now):
        """Append ``events`` to the order's; returns their sequences."""
        if order_id not in self._store.orders:
            raise _missing_order('notification_events')
        last = self._last(order_id)
        sequences = []
        for offset, event in enumerate(events, 1):
            row = EventRecord(
                id=None, event_id=str(uuid.uuid4()), order_id=order_id,
                sequence=last + offset, event=event.event,
                status=event.status, step=event.step,
                detail=_json(event.detail), created_at=now)
            self._store.events[order_id, row.sequence] = row
            sequences.append(row.sequence)
        return sequences

    def _last(self, order_id):
        return max((sequence for key, sequence in self._store.events
                    if key == order_id), default=0)

    @_reads
    def last_sequence(self, session, order_id):
        """The sequence of the order's last event; 0 if none."""
        return self._last(order_id)

    @_reads
    def events_after(self, session, order_id, sequence, limit):
        """The order's events after ``sequence``, up to ``limit``."""
        return copy.deepcopy(sorted(
            (row for (key, number), row in self._store.events.items()
             if key == order_id and number > sequence),
            key=lambda row: row.sequence)[:limit])

    def events_of_order(self, session, order_id):
        """Every event of the order, in sequence."""
        return self.events_after(session, order_id, 0, None)

    @_writes
    def wake(self, session, order_id, names, now):
        """Make the order's finished deliveries ``names`` PENDING again."""
        for name in names or ():
            step = self._store.steps.get((order_id, name))
            if step is not None and step.status == models.STEP_DONE:
                self._store.steps[order_id, name] = dataclasses.replace(
                    step, status=models.STEP_PENDING, dispatched_at=now,
                    updated_at=now, finished_at=None)

    @_reads
    def paused(self, session, url_id, limit):
        """``[(order_id, generation)]`` of the deliveries waiting for the
        URL, up to ``limit``."""
        name = models.delivery_name(url_id)
        return sorted((step.order_id, step.generation)
                      for step in self._store.steps.values()
                      if step.name == name and
                      step.status == models.STEP_WAITING)[:limit]

    @_writes
    def resume(self, session, url_id, order_ids, now):
        """Make the URL's waiting deliveries of ``order_ids`` PENDING."""
        name = models.delivery_name(url_id)
        for order_id in order_ids or ():
            step = self._store.steps.get((order_id, name))
            if step is not None and step.status == models.STEP_WAITING:
                self._store.steps[order_id, name] = dataclasses.replace(
                    step, status=models.STEP_PENDING, dispatched_at=now,
                    failures=0, updated_at=now)

    @_reads
    def count_open_deliveries(self, session):
        """``{status: count}`` of the deliveries PENDING and WAITING."""
        return dict(collections.Counter(
            step.status for step in self._store.steps.values()
            if models.url_id_of(step.name) is not None and
            step.status in _OPEN))


class InMemoryDatabase:
    """A stand-in for ``worker.db.session.Database`` kept in memory."""

    engine = None

    def __init__(self):
        store = self._store = _Store()
        self.repositories = repositories.Repositories(
            locks=InMemoryLocks(store), orders=InMemoryOrders(store),
            steps=InMemorySteps(store),
            retry_tasks=InMemoryRetryTasks(store),
            services=InMemoryServices(store),
            notifications=InMemoryNotifications(store))

    def session(self):
        """Return a new read-write session."""
        return InMemorySession(self._store)

    def reader(self):
        """Return a new session that refuses writes."""
        return InMemorySession(self._store, read_only=True)

    def dispose(self):
        """Do nothing: there are no connections."""
