"""Repository of order retry tasks. Every function takes the session first."""

import dataclasses
import datetime
import json

import sqlalchemy as sa

from worker.db import models


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
    #: The row's order has a step named ``retry_task``.
    step_exists: bool


def add(session, order_id, retry_task, retry_at, args=(), kwargs=None,
        retry_count=0, now=None):
    """Insert a retry row for ``order_id``; returns it."""
    task = models.OrderRetryTask(
        order_id=order_id, retry_task=retry_task, retry_at=retry_at,
        retry_args=json.dumps(list(args)),
        retry_kwargs=json.dumps(dict(kwargs or {})),
        retry_count=retry_count, parked=False,
        created_at=now or retry_at)
    session.add(task)
    session.flush()
    return task


def due(session, now, limit, after=None):
    """Return up to ``limit`` unparked rows with ``retry_at <= now``.

    Rows come in (retry_at, id) order, each with whether its order has
    the step it names. ``after`` is the (retry_at, id) key
    of the last row of the previous batch, so a batch never sees a row again
    (keyset paging: a row kept after a failed cast does not come back in
    the same pass). The cost is that of the rows returned, through
    ``ix_order_retry_tasks_due``, not that of the table.
    """
    task = models.OrderRetryTask
    query = (
        sa.select(task.id, task.order_id, task.retry_task, task.retry_at,
                  task.retry_args, task.retry_kwargs, task.retry_count,
                  models.OrderStep.name.is_not(None))
        .outerjoin(models.OrderStep,
                   sa.and_(models.OrderStep.order_id == task.order_id,
                           models.OrderStep.name == task.retry_task))
        .where(task.parked == sa.false(), task.retry_at <= now)
        .order_by(task.retry_at, task.id)
        .limit(limit))
    if after is not None:
        last_at, last_id = after
        query = query.where(sa.or_(
            task.retry_at > last_at,
            sa.and_(task.retry_at == last_at, task.id > last_id)))
    return [DueTask(*row) for row in session.execute(query)]


def any_due(session, now):
    """Return True if an unparked row is due at ``now``.

    One probe of ``ix_order_retry_tasks_due``: its cost does not grow with
    the table.
    """
    task = models.OrderRetryTask
    return session.scalar(
        sa.select(task.id)
        .where(task.parked == sa.false(), task.retry_at <= now)
        .limit(1)) is not None


def next_due_after(session, moment):
    """Return the earliest ``retry_at`` after ``moment`` of an unparked row.

    None if there is none. One probe of ``ix_order_retry_tasks_due``.
    """
    task = models.OrderRetryTask
    return session.scalar(
        sa.select(task.retry_at)
        .where(task.parked == sa.false(), task.retry_at > moment)
        .order_by(task.retry_at)
        .limit(1))


def count_due(session, now):
    """Count the unparked rows due at ``now`` (reads only those rows)."""
    task = models.OrderRetryTask
    return session.scalar(
        sa.select(sa.func.count()).select_from(task)
        .where(task.parked == sa.false(), task.retry_at <= now))


def delete(session, task_ids):
    """Delete the rows with these ids; returns how many were deleted."""
    if not task_ids:
        return 0
    result = session.execute(
        sa.delete(models.OrderRetryTask)
        .where(models.OrderRetryTask.id.in_(list(task_ids)))
        .execution_options(synchronize_session=False))
    return result.rowcount


def delete_for_order(session, order_id, step=None):
    """Delete every retry row of one order, or of one of its steps.

    Reads the ids first and deletes by primary key: on MySQL/MariaDB a
    DELETE by the secondary ``order_id`` index takes gap locks that
    deadlock with concurrent inserts of other orders' rows.
    """
    query = sa.select(models.OrderRetryTask.id).where(
        models.OrderRetryTask.order_id == order_id)
    if step is not None:
        query = query.where(models.OrderRetryTask.retry_task == step)
    delete(session, list(session.scalars(query)))


def _as_read(rows):
    """Match ``rows`` as they were read, not rows that took their ids since.

    An id can come back: SQLite gives a new row the highest id plus one,
    so once the row with the highest id is deleted (a worker replaced it
    while the scheduler was casting it) the next insert, maybe another
    order's, takes that id again.
    """
    task = models.OrderRetryTask
    # The id list first: it is what the databases plan the primary key
    # lookup from (PostgreSQL does not, from the row values alone).
    return sa.and_(
        task.id.in_([row.id for row in rows]),
        sa.tuple_(task.id, task.order_id, task.retry_at).in_(
            [(row.id, row.order_id, row.retry_at) for row in rows]))


def delete_as_read(session, rows):
    """Delete these rows (``DueTask``) as the scheduler read them.

    Returns the ``(order_id, step)`` of the rows deleted.
    """
    if not rows:
        return set()
    task = models.OrderRetryTask
    deleted = {tuple(row) for row in session.execute(
        sa.select(task.order_id, task.retry_task).where(_as_read(rows)))}
    session.execute(
        sa.delete(models.OrderRetryTask).where(_as_read(rows))
        .execution_options(synchronize_session=False))
    return deleted


def park(session, row, reason):
    """Set a row (as it was read) aside: it is never due again until an
    operator acts."""
    session.execute(
        sa.update(models.OrderRetryTask)
        .where(_as_read([row]))
        .values(parked=True, park_reason=reason)
        .execution_options(synchronize_session=False))


def get(session, task_id):
    """Return the retry row with this id, or None."""
    return session.get(models.OrderRetryTask, task_id)


def requeue(session, task_id, now):
    """Make a row due at ``now`` and take it out of the parked set.

    Returns False if there is no such row.
    """
    result = session.execute(
        sa.update(models.OrderRetryTask)
        .where(models.OrderRetryTask.id == task_id)
        .values(retry_at=now, parked=False, park_reason=None)
        .execution_options(synchronize_session=False))
    return result.rowcount == 1


def list_tasks(session, parked=None, order_id=None):
    """Return retry rows ordered by retry_at, filtered on the arguments."""
    query = sa.select(models.OrderRetryTask).order_by(
        models.OrderRetryTask.retry_at, models.OrderRetryTask.id)
    if parked is not None:
        query = query.where(models.OrderRetryTask.parked == parked)
    if order_id:
        query = query.where(models.OrderRetryTask.order_id == order_id)
    return list(session.scalars(query))
