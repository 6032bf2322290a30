"""``worker.db.schedules`` on the in-memory store."""

import collections.abc as abc
import copy
import datetime
import typing
import uuid

from worker.db.memory import base
from worker.db import rows

Session = base.InMemorySession
Moment = datetime.datetime


class InMemorySchedules(base.Repository):
    """``worker.db.schedules`` on the in-memory store."""

    @base.writes
    def create(self, session: Session, project_id: str, order_type: str,
               meta: abc.Mapping[str, typing.Any], priority: int,
               every_seconds: int | None, cron: str | None,
               next_tick_at: Moment, now: Moment, timezone: str = 'UTC',
               overlap: str = 'allow') -> rows.Schedule:
        """Insert a schedule whose first tick is ``next_tick_at``."""
        schedule = base.ScheduleRecord(
            id=str(uuid.uuid4()), project_id=project_id, type=order_type,
            meta=base.to_json(dict(meta)), priority=priority,
            every_seconds=every_seconds, cron=cron,
            next_tick_at=next_tick_at, created_at=now, updated_at=now,
            timezone=timezone, overlap=overlap)
        self._store.schedules[schedule.id] = schedule
        return copy.deepcopy(schedule)

    @base.reads
    def due(self, session: Session, now: Moment,
            limit: int) -> list[rows.Schedule]:
        """Up to ``limit`` schedules due at ``now``, most overdue first."""
        return [copy.deepcopy(schedule) for schedule in sorted(
            (schedule for schedule in self._store.schedules.values()
             if schedule.next_tick_at <= now),
            key=lambda schedule: (schedule.next_tick_at, schedule.id))
        ][:limit]

    @base.reads
    def next_tick_at(self, session: Session) -> Moment | None:
        """The earliest ``next_tick_at``, or None."""
        return min((schedule.next_tick_at
                    for schedule in self._store.schedules.values()),
                   default=None)

    @base.writes
    def advance(self, session: Session, schedule_id: str, read: Moment,
                following: Moment, now: Moment, tick: Moment | None = None,
                order_id: str | None = None) -> bool:
        """Move ``next_tick_at`` from ``read`` to ``following``; returns
        False if it is no longer ``read``."""
        return self._update(
            schedule_id, lambda schedule: schedule.next_tick_at == read,
            {'next_tick_at': following, 'updated_at': now}, tick, order_id)

    @base.writes
    def hold(self, session: Session, schedule_id: str, read: Moment,
             following: Moment, now: Moment, tick: Moment) -> bool:
        """Move ``next_tick_at`` from ``read`` to ``following`` and hold
        ``tick``; False if it is no longer ``read``."""
        return self._update(
            schedule_id, lambda schedule: schedule.next_tick_at == read,
            {'next_tick_at': following, 'buffered_tick_at': tick,
             'updated_at': now})

    @base.reads
    def held(self, session: Session, limit: int) -> list[rows.Schedule]:
        """Up to ``limit`` schedules holding a tick, oldest tick first."""
        return [copy.deepcopy(schedule) for schedule in sorted(
            (schedule for schedule in self._store.schedules.values()
             if schedule.buffered_tick_at is not None),
            key=lambda schedule: (schedule.buffered_tick_at, schedule.id))
        ][:limit]

    @base.writes
    def release_held(self, session: Session, schedule_id: str,
                     tick: Moment, now: Moment,
                     order_id: str | None) -> bool:
        """Forget the held ``tick``, recording ``order_id`` as the last;
        False if the schedule no longer holds ``tick``."""
        return self._update(
            schedule_id, lambda schedule: schedule.buffered_tick_at == tick,
            {'buffered_tick_at': None, 'updated_at': now}, tick, order_id)

    def _update(self, schedule_id: str,
                condition: abc.Callable[[rows.Schedule], bool],
                changes: dict[str, typing.Any], tick: Moment | None = None,
                order_id: str | None = None) -> bool:
        """``worker.db.schedules._update`` on the store (under the
        caller's ``writes``)."""
        schedule = self._store.schedules.get(schedule_id)
        if schedule is None or not condition(schedule):
            return False
        if order_id is not None:
            changes = dict(changes, last_tick_at=tick, last_order_id=order_id)
        self._store.schedules[schedule_id] = base.replace(schedule,
                                                          **changes)
        return True
