"""The in-memory store, its sessions and what its repositories share."""

import collections.abc as abc
import contextlib
import dataclasses
import datetime
import functools
import itertools
import json
import threading
import types
import typing

from oslo_db import exception as db_exc
from sqlalchemy import exc as sa_exc

from worker.db import models
from worker.db import rows

Any = typing.Any
_Row = typing.TypeVar('_Row')


def _record(model: type[models.Base]) -> abc.Callable[..., Any]:
    """A dataclass with the columns of ``model``, in their order.

    A nullable column may be left out (None): a column added by a later
    migration changes no caller that does not use it.
    """
    return dataclasses.make_dataclass(
        model.__name__ + 'Record',
        [(column.key, typing.Any, dataclasses.field(default=None,
                                                    kw_only=True))
         if column.nullable else column.key
         for column in model.__table__.columns],
        namespace={'__doc__': 'A row of ``%s``.' % model.__tablename__,
                   '__module__': __name__})


# Each typed as a maker of its row's protocol (``worker.db.rows``): the
# columns are made at run time, from the model's.
OrderRecord: abc.Callable[..., rows.Order] = _record(models.Order)
StepRecord: abc.Callable[..., rows.Step] = _record(models.OrderStep)
RetryTaskRecord: abc.Callable[..., rows.RetryTask] = _record(
    models.OrderRetryTask)
LockRecord: abc.Callable[..., rows.Lock] = _record(models.EntityLock)
UrlRecord: abc.Callable[..., rows.Url] = _record(models.NotificationUrl)
EventRecord: abc.Callable[..., rows.Event] = _record(
    models.NotificationEvent)
ServiceRecord: abc.Callable[..., rows.Service] = _record(models.Service)
QuotaRecord: abc.Callable[..., rows.ProjectQuota] = _record(
    models.ProjectQuota)
ScheduleRecord: abc.Callable[..., rows.Schedule] = _record(
    models.Schedule)
SignalRecord: abc.Callable[..., rows.OrderSignal] = _record(
    models.OrderSignal)


def replace(record: _Row, **changes: Any) -> _Row:
    """``dataclasses.replace`` of one of these records, typed as the row
    it is."""
    replaced: _Row = dataclasses.replace(
        typing.cast(Any, record), **changes)
    return replaced


_TABLES = ('orders', 'steps', 'tasks', 'locks', 'services', 'urls',
           'events', 'runs', 'slots', 'starts', 'schedules', 'quotas',
           'signals', 'pauses')


class Store:
    """The tables, the id sequence and the lock serializing their use.

    Records in the tables are never changed in place, only replaced, so
    a shallow copy of each table is a snapshot.
    """

    def __init__(self) -> None:
        self.orders: dict[str, rows.Order] = {}
        self.tasks: dict[int, rows.RetryTask] = {}
        self.locks: dict[str, rows.Lock] = {}
        self.services: dict[str, rows.Service] = {}
        self.schedules: dict[str, rows.Schedule] = {}
        self.quotas: dict[str, rows.ProjectQuota] = {}
        #: ``{(order_id, step): StepRecord}``.
        self.steps: dict[tuple[str, str], rows.Step] = {}
        self.task_ids = itertools.count(1)
        #: ``{id: UrlRecord}`` and ``{(order_id, sequence): EventRecord}``.
        self.urls: dict[int, rows.Url] = {}
        self.events: dict[tuple[str, int], rows.Event] = {}
        self.url_ids = itertools.count(1)
        #: ``{id: rows.StepRun}``.
        self.runs: dict[int, rows.StepRun] = {}
        self.run_ids = itertools.count(1)
        #: ``{(key, slot): (order_id, step, generation)}``, and
        #: ``{(key, slot): started_at}``.
        self.slots: dict[tuple[str, int], tuple[str, str, int]] = {}
        self.starts: dict[tuple[str, int], datetime.datetime] = {}
        #: ``{id: SignalRecord}``.
        self.signals: dict[int, rows.OrderSignal] = {}
        self.signal_ids = itertools.count(1)
        #: ``{id: worker.db.pauses.Pause}``.
        self.pauses: dict[int, Any] = {}
        self.pause_ids = itertools.count(1)
        self.holder: int | None = None
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def hold(self) -> abc.Iterator[None]:
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

    def snapshot(self) -> dict[str, dict[Any, Any]]:
        return {name: dict(getattr(self, name)) for name in _TABLES}

    def restore(self, snapshot: abc.Mapping[str, dict[Any, Any]]) -> None:
        for name, records in snapshot.items():
            table = getattr(self, name)
            table.clear()
            table.update(records)


class InMemorySession:
    """A session on an ``InMemoryDatabase``; a context manager.

    ``begin()`` opens a transaction: it waits for the store, and undoes
    every write of the block if the block raises. A read outside
    ``begin()`` is allowed (and, like SQLAlchemy's autobegin, makes a
    later ``begin()`` on this session fail until it is closed); a write
    outside it, or through a ``reader()`` session, raises RuntimeError.
    """

    def __init__(self, store: Store, read_only: bool = False) -> None:
        self._store = store
        self._read_only = read_only
        self._in_transaction = self._autobegun = self._failed = False

    def __enter__(self) -> typing.Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None,
                 exc: BaseException | None,
                 traceback: types.TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """End the implicit transaction of reads outside ``begin()``."""
        self._autobegun = False

    @contextlib.contextmanager
    def begin(self) -> abc.Iterator[None]:
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
    def statement(self, store: Store, write: bool) -> abc.Iterator[None]:
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


_Repo = typing.TypeVar('_Repo', bound='Repository')
_Params = typing.ParamSpec('_Params')
_Result = typing.TypeVar('_Result')
#: A repository method: the repository, the session, then the rest.
_Method = abc.Callable[typing.Concatenate[_Repo, typing.Any, _Params],
                       _Result]


def _statement(write: bool) -> abc.Callable[
        [_Method[_Repo, _Params, _Result]],
        _Method[_Repo, _Params, _Result]]:
    """A decorator that runs a repository method as one statement of
    its session (``InMemorySession.statement``); the method's signature
    is kept, for mypy to check against its protocol."""
    def decorator(method: _Method[_Repo, _Params, _Result]
                  ) -> _Method[_Repo, _Params, _Result]:
        @functools.wraps(method)
        def wrapper(self: _Repo, session: typing.Any, *args: _Params.args,
                    **kwargs: _Params.kwargs) -> _Result:
            if not isinstance(session, InMemorySession):
                raise TypeError('not an in-memory session: %r' % session)
            with session.statement(self._store, write):
                return method(self, session, *args, **kwargs)
        return wrapper
    return decorator


reads = _statement(write=False)
writes = _statement(write=True)


_Json = typing.TypeVar('_Json')


def to_json(value: _Json) -> _Json:
    """``value`` as a JSON column gives it back."""
    loaded: _Json = json.loads(json.dumps(value))
    return loaded


class Repository:
    """An aggregate's repository on a store."""

    def __init__(self, store: Store) -> None:
        self._store = store


def missing_order(table: str) -> db_exc.DBReferenceError:
    """The error of a row whose order does not exist (its foreign key)."""
    return db_exc.DBReferenceError(
        table, 'fk_%s_order_id_orders' % table, 'order_id', 'orders')


def insert_steps(store: Store, order_id: str, names: abc.Iterable[str],
                 roots: abc.Container[str], now: datetime.datetime,
                 dispatched: bool = True) -> None:
    """``steps.create`` on ``store``, with the keys' integrity checks."""
    if order_id not in store.orders:
        raise missing_order('order_steps')
    names = list(names)
    for name in names:
        if (order_id, name) in store.steps:
            raise db_exc.DBDuplicateEntry(columns=['order_id', 'name'])
    for name in names:
        root = name in roots
        store.steps[order_id, name] = StepRecord(
            order_id=order_id, name=name,
            status=models.STEP_PENDING if root else models.STEP_WAITING,
            generation=0, attempt=0, failures=0, polls=0, crashes=0,
            owner=None, claimed_at=None, lease_expires_at=None,
            dispatched_at=now if root and dispatched else None,
            started_at=None,
            finished_at=None, last_error=None, output=None, updated_at=now)


# A run's result releases the step: no owner, not in flight.
RELEASED: dict[str, None] = {'owner': None, 'claimed_at': None,
                             'lease_expires_at': None,
                             'dispatched_at': None}
# A run's result: its step's crashes in a row end (``steps._ENDED``).
ENDED: dict[str, typing.Any] = dict(RELEASED, crashes=0)
OPEN = (models.STEP_WAITING, models.STEP_PENDING)


def step_key(step: rows.Step) -> tuple[str, str]:
    return (step.order_id, step.name)
