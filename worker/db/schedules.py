"""Repository of schedules: orders created every interval or at the times
of a cron expression. SQL: the ORM to insert and read; Core UPDATE and
DELETE statements for the changes, the row count being the answer. Every
function takes the session first.

The retry daemons read the schedules due (``due``, by the index on
``next_tick_at``) and move each one's ``next_tick_at`` on by a
conditional UPDATE (``advance``) that names the tick they read: of
several daemons that read one tick, one moves it. That the tick makes
one order is the unique (project_id, idempotency_key) index of the
orders' doing, not this module's (``worker.common.ticks.order_key``).

A ``buffer-one`` schedule whose tick came while its last order was open
holds that tick in ``buffered_tick_at`` (``hold``); the daemons read the
held ticks (``held``, by their index) and release each once its open
order has ended (``release_held``, conditional on the tick they read,
as ``advance`` is).
"""

import collections.abc as abc
import datetime
import typing
import uuid

import sqlalchemy as sa
from sqlalchemy import orm

from worker.db import models
from worker.db import rows
from worker.db import statements

Moment = datetime.datetime


def create(session: orm.Session, project_id: str, order_type: str,
           meta: abc.Mapping[str, typing.Any], priority: int,
           every_seconds: int | None, cron: str | None,
           next_tick_at: Moment, now: Moment, timezone: str = 'UTC',
           overlap: str = 'allow') -> rows.Schedule:
    """Insert a schedule whose first tick is ``next_tick_at``."""
    schedule = models.Schedule(
        id=str(uuid.uuid4()), project_id=project_id, type=order_type,
        meta=dict(meta), priority=priority, every_seconds=every_seconds,
        cron=cron, next_tick_at=next_tick_at, created_at=now,
        updated_at=now, timezone=timezone, overlap=overlap)
    session.add(schedule)
    session.flush()
    return schedule


def get(session: orm.Session, schedule_id: str) -> rows.Schedule | None:
    """Return the schedule with this id, or None."""
    return session.get(models.Schedule, schedule_id)


def list_schedules(session: orm.Session,
                   project_id: str | None = None) -> list[rows.Schedule]:
    """Every schedule (of ``project_id`` only, unless None), oldest
    first."""
    query = sa.select(models.Schedule).order_by(models.Schedule.created_at,
                                                models.Schedule.id)
    if project_id is not None:
        query = query.where(models.Schedule.project_id == project_id)
    return list(session.scalars(query))


def delete(session: orm.Session, schedule_id: str) -> bool:
    """Delete the schedule; returns False if there was none. Its orders
    stay."""
    return statements.changed(session, (
        sa.delete(models.Schedule)
        .where(models.Schedule.id == schedule_id)
        .execution_options(synchronize_session=False))) == 1


def due(session: orm.Session, now: Moment,
        limit: int) -> list[rows.Schedule]:
    """Up to ``limit`` schedules whose ``next_tick_at`` is at or before
    ``now``, the most overdue first."""
    return list(session.scalars(
        sa.select(models.Schedule)
        .where(models.Schedule.next_tick_at <= now)
        .order_by(models.Schedule.next_tick_at, models.Schedule.id)
        .limit(limit)))


def next_tick_at(session: orm.Session) -> Moment | None:
    """The earliest ``next_tick_at`` of any schedule, or None if there is
    no schedule."""
    return session.scalar(sa.select(sa.func.min(
        models.Schedule.next_tick_at)))


def advance(session: orm.Session, schedule_id: str, read: Moment,
            following: Moment, now: Moment, tick: Moment | None = None,
            order_id: str | None = None) -> bool:
    """Move the schedule's ``next_tick_at`` from ``read`` to
    ``following``; returns False, changing nothing, if it is no longer
    ``read`` (another daemon moved it first) or the schedule is gone.

    :param tick: the tick whose order is ``order_id``, recorded as the
        last tick; None when the tick was skipped (its create was
        refused), which leaves the last tick and order as they were.
    """
    return _update(session, schedule_id,
                   models.Schedule.next_tick_at == read,
                   {'next_tick_at': following, 'updated_at': now},
                   tick, order_id)


def hold(session: orm.Session, schedule_id: str, read: Moment,
         following: Moment, now: Moment, tick: Moment) -> bool:
    """Move ``next_tick_at`` from ``read`` to ``following`` and hold
    ``tick`` (replacing a tick held before) until the open order ends;
    False, changing nothing, as ``advance``."""
    return _update(session, schedule_id,
                   models.Schedule.next_tick_at == read,
                   {'next_tick_at': following, 'buffered_tick_at': tick,
                    'updated_at': now})


def held(session: orm.Session, limit: int) -> list[rows.Schedule]:
    """Up to ``limit`` schedules holding a tick, the oldest tick first."""
    return list(session.scalars(
        sa.select(models.Schedule)
        .where(models.Schedule.buffered_tick_at.is_not(None))
        .order_by(models.Schedule.buffered_tick_at, models.Schedule.id)
        .limit(limit)))


def release_held(session: orm.Session, schedule_id: str, tick: Moment,
                 now: Moment, order_id: str | None) -> bool:
    """Forget the held ``tick``, recording ``order_id`` (its order, or
    None if it was refused) as the last; False, changing nothing, if
    the schedule no longer holds ``tick``."""
    return _update(session, schedule_id,
                   models.Schedule.buffered_tick_at == tick,
                   {'buffered_tick_at': None, 'updated_at': now},
                   tick, order_id)


def record_order(session: orm.Session, schedule_id: str, tick: Moment,
                 order_id: str, now: Moment) -> bool:
    """Record ``order_id``, made at ``tick`` outside the series (a
    trigger), as the schedule's last order; False if it is gone."""
    return _update(session, schedule_id, sa.true(), {'updated_at': now},
                   tick, order_id)


def _update(session: orm.Session, schedule_id: str,
            condition: typing.Any, values: dict[str, typing.Any],
            tick: Moment | None = None,
            order_id: str | None = None) -> bool:
    """Set ``values`` on the schedule if ``condition`` holds, and
    ``order_id`` (unless None) as the order of its last tick ``tick``;
    True if it changed (the row count is the answer)."""
    if order_id is not None:
        values = dict(values, last_tick_at=tick, last_order_id=order_id)
    return statements.changed(session, (
        sa.update(models.Schedule)
        .where(models.Schedule.id == schedule_id, condition)
        .values(**values)
        .execution_options(synchronize_session=False))) == 1
