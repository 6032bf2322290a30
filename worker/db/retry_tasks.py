"""Repository of order retry tasks. SQL: Core for the worker's writes
(inserts without an ORM object, deletes by key) and for the retry
daemon's reads, column SELECTs shaped for their indexes (``due`` one
priority level at a time, a MariaDB index hint, ``READS`` for the query
plan checks); the ORM only for the operators' reads (``get``,
``list_tasks``). Every function takes the session first.
"""

import collections.abc as abc
import dataclasses
import datetime
import json
import typing

import sqlalchemy as sa
from sqlalchemy import orm

from worker.db import models
from worker.db import rows
from worker.db import statements

Any = typing.Any
Moment = datetime.datetime
#: A ``DueTask.key``: ``(priority, retry_at, id)``.
Key = tuple[int, Moment, int]

_TABLE = statements.RETRY_TASKS


@dataclasses.dataclass(frozen=True)
class DueTask:
    """A due retry row as the scheduler reads it (JSON not yet decoded)."""

    id: int
    order_id: str
    retry_task: str
    retry_at: datetime.datetime
    retry_args: str
    retry_kwargs: str
    retry_count: int
    priority: int
    #: The row's order has a step named ``retry_task``.
    step_exists: bool
    #: The row's order's type, which picks the topic its step is cast to
    #: (``worker.rpcapi.Topics``); None if the order is gone.
    order_type: str | None = None
    #: The row's order's ``trace_context`` (``worker.tracing``), read only
    #: when ``due`` is asked for it (tracing on); None otherwise.
    trace_context: Any = None

    @property
    def key(self) -> Key:
        """Its place in the order ``due`` returns rows in: the ``after``
        of the next batch when it ends one."""
        return (self.priority, self.retry_at, self.id)


def _row(order_id: str, retry_task: str, retry_at: Moment,
         args: abc.Iterable[Any] = (),
         kwargs: abc.Mapping[str, Any] | None = None, retry_count: int = 0,
         now: Moment | None = None, priority: int = 0,
         waiting_for: str | None = None) -> dict[str, Any]:
    """The columns of a new retry row, from ``add_many``'s arguments."""
    return dict(order_id=order_id, retry_task=retry_task, retry_at=retry_at,
                retry_args=json.dumps(list(args)),
                retry_kwargs=json.dumps(dict(kwargs or {})),
                retry_count=retry_count,
                priority=models.check_priority(priority), parked=False,
                created_at=now or retry_at, waiting_for=waiting_for)


def add_many(session: orm.Session,
             rows: abc.Collection[abc.Mapping[str, Any]]) -> None:
    """Insert retry rows (one or several).

    :param rows: for each, a dict of ``_row``'s keyword arguments:
        ``order_id``, ``retry_task``, ``retry_at``, and optionally
        ``args``, ``kwargs``, ``retry_count``, ``now`` (its creation
        time, ``retry_at`` if not given), ``priority`` (the order's,
        copied so that the due query orders rows without reading their
        orders; ``ValueError`` if it is not a priority) and
        ``waiting_for`` (the resource key whose slot the step waits for:
        a run that frees one casts the row before ``retry_at``,
        ``worker.steps.flow``).

    One execution with the parameters of every row: SQLAlchemy sends them
    as one multi-row INSERT on each database.
    """
    if rows:
        statements.execute(session, _INSERT,
                           [_row(**arguments) for arguments in rows])


_INSERT = sa.insert(_TABLE)


def due(session: orm.Session, now: Moment, limit: int,
        after: Key | None = None, traces: bool = False) -> list[DueTask]:
    """Return up to ``limit`` unparked rows with ``retry_at <= now``.

    Rows come highest priority first, then in (retry_at, id) order (their
    ``DueTask.key`` order, priority descending), each with whether its
    order has the step it names and its order's type (one primary-key
    probe of each table per row, in the same query: the type picks the
    topic the row's step is cast to). ``after`` is the ``key`` of the last
    row of the previous batch, so a batch never sees a row again (keyset
    paging: a row kept after a failed cast does not come back in the same
    pass).

    Each priority level is one range of
    ``ix_order_retry_tasks_priority_due``, read by a query of its own from
    the highest level down, and only as far as the batch needs: a batch
    costs the rows it returns plus one probe of each level it goes
    through, and a pass goes through each level once (a batch starts at
    the level of ``after``). A single query ordered by priority then
    retry_at could not stop at ``now`` within each level: it would read
    the rows not yet due of every level above the last one it returns.

    :param traces: read the orders' ``trace_context`` too (tracing on):
        one more column of the order row the query reads already; off,
        the query is the same as without tracing.
    """
    found: list[DueTask] = []
    top = models.MAX_PRIORITY if after is None else after[0]
    for priority in range(top, models.MIN_PRIORITY - 1, -1):
        query = _due_of_level(now, priority, limit - len(found),
                              after if priority == top else None, traces)
        found.extend(DueTask(*row) for row in session.execute(query))
        if len(found) >= limit:
            break
    return found


#: The columns of a ``DueTask``, as ``_due_of_level`` reads them.
_DueSelect = sa.Select[int, str, str, Moment, str, str, int, int, bool,
                       str | None]


def _due_of_level(now: Moment, priority: int, limit: int,
                  after: Key | None = None,
                  traces: bool = False) -> _DueSelect:
    """The SELECT of ``due`` for one priority level (after ``after``, a
    ``DueTask.key`` of that level): one range of
    ``ix_order_retry_tasks_priority_due``."""
    task = models.OrderRetryTask
    query = (
        sa.select(task.id, task.order_id, task.retry_task, task.retry_at,
                  task.retry_args, task.retry_kwargs, task.retry_count,
                  task.priority, models.OrderStep.name.is_not(None),
                  models.Order.type)
        .outerjoin(models.OrderStep,
                   sa.and_(models.OrderStep.order_id == task.order_id,
                           models.OrderStep.name == task.retry_task))
        .outerjoin(models.Order, models.Order.id == task.order_id)
        .where(task.parked == sa.false(), task.priority == priority,
               task.retry_at <= now)
        .order_by(task.retry_at, task.id)
        .limit(limit))
    if after is not None:
        query = query.where(_after(after[1], after[2]))
    if traces:
        query = query.add_columns(models.Order.trace_context)
    for dialect in ('mysql', 'mariadb'):
        query = query.with_hint(_TABLE, _FORCE_PRIORITY_INDEX, dialect)
    return query


# NOTE: MariaDB would rather read a level through ix_order_retry_tasks_due,
# which gives the same order, filtering the priority row by row: a level
# read while other levels have rows due then reads every one of them
# first (323 ms instead of 0.3 ms on PostgreSQL, 300,000 rows due at a
# higher level; tests.benchmarks' query plans show its choice).
_FORCE_PRIORITY_INDEX = 'FORCE INDEX (ix_order_retry_tasks_priority_due)'


def _after(last_at: Moment, last_id: int) -> sa.ColumnElement[bool]:
    """Rows after ``(last_at, last_id)`` in (retry_at, id) order.

    ``retry_at >= last_at`` is redundant but is what every database
    starts its index range at; from the OR alone PostgreSQL would read the
    level from its first row.
    """
    task = models.OrderRetryTask
    return sa.and_(task.retry_at >= last_at, sa.or_(
        task.retry_at > last_at, task.id > last_id))


def any_due(session: orm.Session, now: Moment) -> bool:
    """Return True if an unparked row is due at ``now``.

    One probe of ``ix_order_retry_tasks_due``: its cost does not grow with
    the table.
    """
    return session.scalar(_any_due_query(now)) is not None


def _any_due_query(now: Moment) -> sa.Select[int]:
    """The SELECT of ``any_due``.

    Ordered, although any row would do: without the order, PostgreSQL
    reads a table whose rows are mostly due from its first page, and rows
    not due there (a step polled daily) or parked are read one by one.
    """
    task = models.OrderRetryTask
    return (sa.select(task.id)
            .where(task.parked == sa.false(), task.retry_at <= now)
            .order_by(task.retry_at)
            .limit(1))


def next_due_after(session: orm.Session, moment: Moment) -> Moment | None:
    """Return the earliest ``retry_at`` after ``moment`` of an unparked row.

    None if there is none. One probe of ``ix_order_retry_tasks_due``.
    """
    return session.scalar(_next_due_query(moment))


def _next_due_query(moment: Moment) -> sa.Select[Moment]:
    """The SELECT of ``next_due_after``."""
    task = models.OrderRetryTask
    return (sa.select(task.retry_at)
            .where(task.parked == sa.false(), task.retry_at > moment)
            .order_by(task.retry_at)
            .limit(1))


def count_due(session: orm.Session, now: Moment) -> int:
    """Count the unparked rows due at ``now`` (reads only those rows)."""
    task = models.OrderRetryTask
    return session.execute(
        sa.select(sa.func.count()).select_from(task)
        .where(task.parked == sa.false(), task.retry_at <= now)).scalar_one()


def count_later(session: orm.Session, now: Moment) -> int:
    """Count the unparked rows due after ``now``."""
    task = models.OrderRetryTask
    return session.execute(
        sa.select(sa.func.count()).select_from(task)
        .where(task.parked == sa.false(), task.retry_at > now)).scalar_one()


def count_parked(session: orm.Session) -> int:
    """Count the parked rows (reads only those rows)."""
    task = models.OrderRetryTask
    return session.execute(
        sa.select(sa.func.count()).select_from(task)
        .where(task.parked == sa.true())).scalar_one()


def delete_for_order(session: orm.Session, order_id: str,
                     step: str | None = None) -> None:
    """Delete the retry rows of one order's workflow, or of one step.

    Without ``step``, the rows of its deliveries (``notify:*`` steps) are
    kept: an order that ended still notifies its end.

    One DELETE by the ``order_id`` index. On MySQL/MariaDB it locks only
    the rows it deletes: at READ COMMITTED (``worker.db.session``) InnoDB
    takes no gap locks, which would deadlock with concurrent inserts of
    other orders' rows.
    """
    if step is None:
        statements.execute(session, _DELETE_FOR_ORDER,
                           {'where_order_id': order_id})
    else:
        delete_for_steps(session, [(order_id, step)])


def delete_for_steps(session: orm.Session,
                     keys: abc.Collection[tuple[str, str]]) -> None:
    """Delete the retry rows of these steps: ``[(order_id, step), ...]``.
    """
    if keys:
        statements.execute_many(session, _DELETE_FOR_STEP, [
            {'where_order_id': order_id, 'where_retry_task': step}
            for order_id, step in keys])


_DELETE_FOR_STEP = sa.delete(_TABLE).where(
    statements.where(_TABLE.c.order_id),
    statements.where(_TABLE.c.retry_task))
_DELETE_FOR_ORDER = sa.delete(_TABLE).where(
    statements.where(_TABLE.c.order_id),
    ~models.delivery_steps(_TABLE.c.retry_task))


def delete_as_read(session: orm.Session,
                   rows: abc.Collection[DueTask]) -> set[tuple[str, str]]:
    """Delete these rows (``DueTask``) as the scheduler read them.

    By id alone: an id is never given to another row (AUTOINCREMENT on
    SQLite, sequences elsewhere), so a row read is still that row or is
    gone (a worker replaced it: its new row has a new id and stays).
    Returns the ``(order_id, step)`` of the rows deleted; with ``DELETE
    ... RETURNING`` where the database has it (PostgreSQL, SQLite 3.35,
    MariaDB 10.0.5; not MySQL), in the same statement.
    """
    if not rows:
        return set()
    delete = (_delete_returning if session.get_bind().dialect.delete_returning
              else _read_then_delete)
    return delete(session, _TABLE.c.id.in_([row.id for row in rows]))


#: The columns ``delete_as_read`` returns of each row deleted, and what
#: it returns of them: ``(order_id, step)``.
_NAMED = (_TABLE.c.order_id, _TABLE.c.retry_task)
StepKey = tuple[str, str]


def _delete_returning(session: orm.Session,
                      matching: sa.ColumnElement[bool]) -> set[StepKey]:
    """Delete the rows ``matching``; their keys, in the same statement."""
    return {(order_id, step) for order_id, step in session.execute(
        sa.delete(_TABLE).where(matching).returning(*_NAMED))}


def _read_then_delete(session: orm.Session,
                      matching: sa.ColumnElement[bool]) -> set[StepKey]:
    """Delete the rows ``matching``; their keys, read first (MySQL)."""
    deleted = {(order_id, step) for order_id, step in session.execute(
        sa.select(*_NAMED).where(matching))}
    session.execute(sa.delete(_TABLE).where(matching))
    return deleted


def park(session: orm.Session, row: DueTask, reason: str) -> None:
    """Set a row (as it was read, by id) aside: it is never due again
    until an operator acts."""
    session.execute(
        sa.update(_TABLE).where(_TABLE.c.id == row.id)
        .values(parked=True, park_reason=reason))


def get(session: orm.Session, task_id: int) -> rows.RetryTask | None:
    """Return the retry row with this id, or None."""
    return session.get(models.OrderRetryTask, task_id)


def requeue(session: orm.Session, task_id: int, now: Moment) -> bool:
    """Make a row due at ``now`` and take it out of the parked set.

    Returns False if there is no such row.
    """
    return statements.execute(session, (
        sa.update(_TABLE).where(_TABLE.c.id == task_id)
        .values(retry_at=now, parked=False, park_reason=None))
    ).rowcount == 1


def list_tasks(session: orm.Session, parked: bool | None = None,
               order_id: str | None = None) -> list[rows.RetryTask]:
    """Return retry rows ordered by retry_at, filtered on the arguments."""
    query = sa.select(models.OrderRetryTask).order_by(
        models.OrderRetryTask.retry_at, models.OrderRetryTask.id)
    if parked is not None:
        query = query.where(models.OrderRetryTask.parked == parked)
    if order_id:
        query = query.where(models.OrderRetryTask.order_id == order_id)
    return list(session.scalars(query))


#: The retry daemon's reads by name, for what checks their query plans
#: (``tests.benchmarks.plans``): builders of the statements that
#: ``any_due``, ``next_due_after`` and ``due`` (for one level) run.
READS: dict[str, abc.Callable[..., sa.Select[typing.Unpack[
    tuple[Any, ...]]]]] = {'any_due': _any_due_query,
                           'next_due_after': _next_due_query,
                           'due_of_level': _due_of_level}
