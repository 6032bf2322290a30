"""The public Python API of periodic orders: schedules that create an
order every interval or at the times of a cron expression, read in the
schedule's IANA time zone (UTC by default).

Beside ``worker.api`` and built on it: a schedule is checked as an order
is (its type installed, its meta against the type's ``meta_schema``, its
project and priority), and each tick's order is made by
``worker.api.OrderAPI``'s create, so its first steps are cast as any
order's. What is stable across releases is what ``worker.api`` says of
itself, for this module's ``__all__``.

Example::

    schedules = ScheduleAPI.from_config(conf)
    schedule = schedules.create('certificate', {'plugin_name': 'simple'},
                                project_id=project_id, every='30d')

The retry daemons create the orders (``scheduler.ticks``): the order of
a tick has the idempotency key ``schedule:<id>:<tick>`` in the
schedule's project, so however many daemons see one tick, it makes one
order. Of the ticks missed while every daemon was down, the latest
``[scheduler] schedule_backfill_max_runs`` (1 by default) make an order
each when a daemon returns. A tick that comes while the schedule's last
order is still open follows the schedule's overlap policy
(``OVERLAP_POLICIES``); ``trigger`` makes an order now, outside the
series of ticks. doc/operations.md ("Schedules") says what a daylight
saving change does to a tick.
"""

import dataclasses
import datetime
import typing
import uuid

from worker.api import checks
from worker.api import errors
from worker.api import orders as orders_module
from worker.api import requests
from worker.common import ticks

__all__ = ['ScheduleAPI', 'Schedule', 'ScheduleNotFound', 'InvalidSchedule',
           'OrderAPIError', 'parse_duration', 'MIN_EVERY_SECONDS',
           'MAX_EVERY_SECONDS', 'OVERLAP_POLICIES', 'DEFAULT_OVERLAP',
           'DEFAULT_TIMEZONE']

#: The shortest and longest interval, in seconds.
MIN_EVERY_SECONDS = ticks.MIN_EVERY_SECONDS
MAX_EVERY_SECONDS = ticks.MAX_EVERY_SECONDS
#: The errors of ``worker.api``, of which this module's are kinds.
OrderAPIError = errors.OrderAPIError
#: What a tick does while the last order is open: ``skip``, ``allow``,
#: ``cancel-previous`` or ``buffer-one``; ``allow`` by default.
OVERLAP_POLICIES = ticks.OVERLAP_POLICIES
DEFAULT_OVERLAP = ticks.OVERLAP_ALLOW
#: The time zone of a schedule created without one.
DEFAULT_TIMEZONE = 'UTC'


class ScheduleNotFound(errors.OrderAPIError, LookupError):
    """No schedule has this id (in the caller's project)."""


class InvalidSchedule(errors.InvalidRequest):
    """Not an interval or cron expression a schedule may have."""


def parse_duration(text):
    """Seconds of a duration such as ``30s``, ``5m``, ``1h``, ``30d``.

    :raises InvalidSchedule: not an integer and one of those units, or
        not from ``MIN_EVERY_SECONDS`` to ``MAX_EVERY_SECONDS``.
    """
    try:
        return ticks.parse_duration(text)
    except ticks.InvalidSchedule as exc:
        raise InvalidSchedule(str(exc)) from None


@dataclasses.dataclass(frozen=True)
class Schedule:
    """A schedule as its caller sees it. Times are naive UTC."""

    id: str
    type: str
    project_id: str
    meta: dict[str, typing.Any]
    priority: int
    #: Its interval in seconds, or None if it has a cron expression.
    every_seconds: int | None
    #: Its cron expression, or None if it has an interval.
    cron: str | None
    #: The next tick a retry daemon creates an order for.
    next_tick_at: datetime.datetime
    #: The tick of the last order created, and that order; None before
    #: the first.
    last_tick_at: datetime.datetime | None
    last_order_id: str | None
    created_at: datetime.datetime
    updated_at: datetime.datetime
    #: The IANA time zone its cron expression is read in.
    timezone: str = DEFAULT_TIMEZONE
    #: Its overlap policy, one of ``OVERLAP_POLICIES``.
    overlap: str = DEFAULT_OVERLAP
    #: The tick a ``buffer-one`` schedule holds until its last order
    #: ends; None when it holds none.
    buffered_tick_at: datetime.datetime | None = None


class ScheduleAPI:
    """Create, read and delete schedules; create a tick's order.

    Its parameters are ``worker.api.OrderAPI``'s, whose orders it
    creates. It is safe to share between threads.
    """

    def __init__(self, database, conf, worker_api=None, now=None,
                 rows_per_cast=50, announcer=None, *, orders=None):
        self._database = database
        # ``from_config`` passes the OrderAPI it built, which owns the
        # connections, the transport and the announcer that ``close``
        # closes.
        self._orders = orders or orders_module.OrderAPI(
            database, conf, worker_api, now=now,
            rows_per_cast=rows_per_cast, announcer=announcer)

    @classmethod
    def from_config(cls, conf):
        """Build the API as ``OrderAPI.from_config`` does."""
        orders = orders_module.OrderAPI.from_config(conf)
        return cls(orders.database, conf, orders=orders)

    def close(self):
        """Close what ``OrderAPI.close`` closes."""
        self._orders.close()

    def create(self, order_type, meta, *, project_id, every=None,
               cron=None, priority=0, timezone=None, overlap=None):
        """Create a schedule of orders of ``order_type``; returns it.

        :param every: the interval, seconds or a duration such as
            ``'30d'``: the first tick is one interval after now.
        :param cron: a five-field cron expression, such as
            ``'0 3 * * *'``, read in ``timezone``; one of ``every`` and
            ``cron``.
        :param timezone: an IANA time zone name such as
            ``'Europe/Paris'`` for ``cron``; None for UTC.
        :param overlap: what a tick does while the last order is still
            open, one of ``OVERLAP_POLICIES``; None for ``allow``.
        :raises UnknownOrderType, InvalidMeta, InvalidRequest,
            InvalidSchedule: (``worker.api``'s but the last) nothing was
            written.
        """
        self._orders.check(order_type, meta, project_id=project_id,
                           priority=priority)
        if isinstance(every, str):
            every = parse_duration(every)
        try:
            spec = ticks.Spec.of(every, cron, timezone)
            overlap = ticks.check_overlap(
                DEFAULT_OVERLAP if overlap is None else overlap)
        except ticks.InvalidSchedule as exc:
            raise InvalidSchedule(str(exc)) from None
        now = self._orders.now()
        with self._database.session() as session, session.begin():
            row = self._database.repositories.schedules.create(
                session, project_id, order_type, meta, priority,
                spec.every_seconds, spec.cron, ticks.first_tick(spec, now),
                now, timezone=spec.timezone, overlap=overlap)
            return _schedule(row)

    def get(self, schedule_id, *, project_id=None, all_projects=False):
        """The ``Schedule`` with this id.

        :param project_id: the caller's project: another project's
            schedule is not found.
        :param all_projects: True for any project's (an operator's
            view), instead of ``project_id``.
        :raises ScheduleNotFound: no such schedule (in ``project_id``).
        :raises worker.api.InvalidProjectScope: neither ``project_id``
            nor ``all_projects=True``, or both.
        """
        return self._get(schedule_id, checks.scope(project_id, all_projects))

    def _get(self, schedule_id, scope):
        checks.check_order_id(schedule_id, 'schedule_id')
        with self._database.reader() as session:
            row = self._database.queries.schedules.get(session,
                                                       schedule_id)
        if row is None or scope not in (None, row.project_id):
            raise ScheduleNotFound('no schedule %s' % schedule_id)
        return _schedule(row)

    def list(self, *, project_id=None, all_projects=False):
        """Every ``Schedule`` of ``project_id``, or of every project with
        ``all_projects=True``; oldest first.

        :raises worker.api.InvalidProjectScope: as ``get``.
        """
        scope = checks.scope(project_id, all_projects)
        with self._database.reader() as session:
            return [_schedule(row) for row in
                    self._database.queries.schedules.list_schedules(
                        session, scope)]

    def delete(self, schedule_id, *, project_id=None, all_projects=False):
        """Delete a schedule: no tick after this one creates an order;
        the orders it created stay.

        :raises ScheduleNotFound: no such schedule (in ``project_id``).
        :raises worker.api.InvalidProjectScope: as ``get``.
        """
        self._get(schedule_id, checks.scope(project_id, all_projects))
        with self._database.session() as session, session.begin():
            if not self._database.queries.schedules.delete(
                    session, schedule_id):
                raise ScheduleNotFound('no schedule %s' % schedule_id)

    def trigger(self, schedule_id, *, project_id=None, all_projects=False):
        """Create an order of the schedule now, outside its series of
        ticks: its next tick stays as it was. The order is recorded as
        the schedule's last, so the next tick's overlap policy sees it;
        the trigger itself ignores the policy (it is asked for).

        :returns: the ``worker.api.Order``.
        :raises ScheduleNotFound: no such schedule (in ``project_id``).
        :raises worker.api.OrderAPIError: the order is refused (its type
            is no longer installed, its project's quota is reached...).
        :raises worker.api.InvalidProjectScope: as ``get``.
        """
        schedule = self._get(schedule_id,
                             checks.scope(project_id, all_projects))
        now = self._orders.now()
        # Each trigger is an order of its own: two in one second are two.
        [order] = self._orders.submit(requests.NewOrder(
            schedule.type, _meta_of(schedule), schedule.project_id,
            idempotency_key=ticks.trigger_key(schedule.id, uuid.uuid4().hex),
            priority=schedule.priority, schedule_id=schedule.id))
        with self._database.session() as session, session.begin():
            self._database.queries.schedules.record_order(
                session, schedule.id, now, order.id, now)
        return order

    def cancel_order(self, schedule, order_id, reason):
        """Cancel ``order_id``, an open order of ``schedule``, for a tick
        whose overlap policy is ``cancel-previous``: ``OrderAPI.cancel``
        in the schedule's project.

        :returns: the ``worker.api.Order``.
        :raises worker.api.OrderAPIError: it cannot be cancelled (it has
            ended meanwhile, or is gone).
        """
        return self._orders.cancel(order_id, project_id=schedule.project_id,
                                   reason=reason)

    def create_order(self, schedule, tick):
        """Create the order of ``schedule``'s ``tick``, or return it if
        it exists: ``worker.api.OrderAPI.create`` with the tick's
        idempotency key.

        :param schedule: a ``Schedule``, or a row of ``schedules``.
        :returns: the ``worker.api.Order``.
        :raises worker.api.OrderAPIError: the order is refused (its type
            is no longer installed, its meta no longer valid, ...).
        """
        if not isinstance(schedule, Schedule) and not all(
                hasattr(schedule, name) for name in _SCHEDULE_FIELDS):
            raise errors.InvalidRequest('schedule must be a Schedule, not %s'
                                        % type(schedule).__name__)
        if not isinstance(tick, datetime.datetime):
            raise errors.InvalidRequest('tick must be a datetime, not %s'
                                        % type(tick).__name__)
        checks.check_order_id(schedule.id, 'schedule.id')
        # With the schedule's id, which ``create`` does not take from a
        # caller.
        [order] = self._orders.submit(requests.NewOrder(
            schedule.type, _meta_of(schedule), schedule.project_id,
            idempotency_key=ticks.order_key(schedule.id, tick),
            priority=schedule.priority, schedule_id=schedule.id))
        return order


# What ``create_order`` reads of a schedule (a ``Schedule`` or a row).
_SCHEDULE_FIELDS = ('id', 'type', 'meta', 'project_id', 'priority')


def _meta_of(schedule):
    """A copy of a schedule's meta (a dict), or what it is, for
    ``OrderAPI.check`` to refuse."""
    meta = schedule.meta
    return dict(meta) if isinstance(meta, dict) else meta


def _schedule(row):
    return Schedule(
        id=row.id, type=row.type, project_id=row.project_id,
        meta=dict(row.meta or {}), priority=row.priority,
        every_seconds=row.every_seconds, cron=row.cron,
        next_tick_at=row.next_tick_at, last_tick_at=row.last_tick_at,
        last_order_id=row.last_order_id, created_at=row.created_at,
        updated_at=row.updated_at, timezone=row.timezone,
        overlap=row.overlap, buffered_tick_at=row.buffered_tick_at)
