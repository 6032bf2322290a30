"""When a schedule's orders are due: durations, cron expressions and the
arithmetic of ticks.

A schedule runs ``every`` a duration (``30s``, ``5m``, ``1h``, ``30d``)
or at the times of a five-field cron expression, read in UTC by croniter
(the cron library of Airflow and others, kept by pallets-eco). Its ticks
are whole seconds: an interval's series starts one interval after the
second the schedule was created, a cron expression's ticks are its
matches.

``due(spec, next_tick_at, now)`` says what a retry daemon does with a
schedule whose ``next_tick_at`` has come: the one tick it creates an
order for, the latest tick at or before ``now`` (ticks missed while every
daemon was down collapse into it), and the first tick after ``now``,
which becomes the schedule's ``next_tick_at``. The time is a parameter:
nothing here reads a clock.
"""

import dataclasses
import datetime
import re
import typing

import croniter

from worker.common import inputs

#: The shortest and longest interval: one second, ten years.
MIN_EVERY_SECONDS = 1
MAX_EVERY_SECONDS = 3650 * 86400

#: The longest cron expression (its column).
MAX_CRON_LENGTH = 255
_CRON_CHARACTERS = re.compile(r'^[0-9A-Za-z*/,?#\- ]*$')
# The fields of a cron expression, and the values each takes.
_FIELDS = (('minute', '0-59'), ('hour', '0-23'), ('day-of-month', '1-31'),
           ('month', '1-12 or jan-dec'), ('day-of-week', '0-7 or sun-sat'))
# Where the search for an expression's first match starts: any moment
# would do.
_REFERENCE = datetime.datetime(2000, 1, 1)

_UNITS = {'s': 1, 'm': 60, 'h': 3600, 'd': 86400}
_DURATION = re.compile(r'^([0-9]{1,10})([smhd])$')

#: Missed ticks of a cron expression counted at most, for a log line.
_MAX_COUNTED = 10000

#: The idempotency key of a tick's order: ``schedule:<id>:<tick>``.
_KEY = 'schedule:%s:%s'


class InvalidSchedule(ValueError):
    """A duration, cron expression or pair of them that is no schedule."""


def parse_duration(text: str) -> int:
    """Seconds of ``text``, an integer and a unit: ``30s``, ``5m``,
    ``1h``, ``30d``.

    :raises InvalidSchedule: not of that form, or outside
        ``MIN_EVERY_SECONDS`` to ``MAX_EVERY_SECONDS``.
    """
    found = _DURATION.match(text.strip()) if isinstance(text, str) else None
    if found is None:
        raise InvalidSchedule(
            'a duration is an integer and a unit, s, m, h or d (such as '
            '30s, 5m, 1h, 30d), not %r' % (text,))
    return check_every(int(found.group(1)) * _UNITS[found.group(2)])


def check_every(seconds: int) -> int:
    """``seconds`` if it is an interval a schedule may have.

    :raises InvalidSchedule: not an integer from ``MIN_EVERY_SECONDS`` to
        ``MAX_EVERY_SECONDS``.
    """
    if isinstance(seconds, bool) or not isinstance(seconds, int) or not \
            MIN_EVERY_SECONDS <= seconds <= MAX_EVERY_SECONDS:
        raise InvalidSchedule(
            'an interval is %d second to %d days, not %s'
            % (MIN_EVERY_SECONDS, MAX_EVERY_SECONDS // 86400,
               inputs.short(seconds)))
    return seconds


def check_cron(expression: str) -> str:
    """``expression``, its fields joined by one space, if it is a
    five-field cron expression (minute, hour, day of month, month, day of
    week), such as ``0 3 * * *``, that matches some date.

    :raises InvalidSchedule: it is not; the message names the field out
        of range, if one is.
    """
    if not isinstance(expression, str):
        raise InvalidSchedule('a cron expression is a string, not %s'
                              % type(expression).__name__)
    if len(expression) > MAX_CRON_LENGTH:
        raise InvalidSchedule('a cron expression has %d characters at '
                              'most, not %d'
                              % (MAX_CRON_LENGTH, len(expression)))
    if not _CRON_CHARACTERS.match(expression):
        raise InvalidSchedule('a cron expression holds digits, letters, '
                              'spaces and * / , - ? # only, not %s'
                              % ascii(expression))
    fields = expression.split()
    if len(fields) != len(_FIELDS):
        raise InvalidSchedule(
            'a cron expression has five fields, minute hour day-of-month '
            'month day-of-week (such as "0 3 * * *"), not %d: %r'
            % (len(fields), expression))
    for index, field in enumerate(fields):
        _check_cron_field(index, field, expression)
    normal = ' '.join(fields)
    try:
        croniter.croniter(normal, _REFERENCE).get_next(datetime.datetime)
    except (croniter.CroniterError, ValueError, OverflowError):
        raise InvalidSchedule('the cron expression %r matches no date (such '
                              'as the 31st of February)' % expression
                              ) from None
    return normal


def _check_cron_field(index: int, field: str, expression: str) -> None:
    """Check one field of a cron expression alone (the others ``*``),
    so that the message names it."""
    name, allowed = _FIELDS[index]
    probe = ['*'] * len(_FIELDS)
    probe[index] = field
    # croniter's random (R) and hashed (H) values would give a schedule
    # another tick at each reading.
    tokens = set(re.split('[,/-]', field.upper()))
    if tokens & {'R', 'H'} or not croniter.croniter.is_valid(
            ' '.join(probe)):
        raise InvalidSchedule(
            'the %s field %r of the cron expression %r is out of range or '
            'not valid: %s takes %s, *, and lists (,), ranges (-) and steps '
            '(/) of them' % (name, field, expression, name, allowed))


@dataclasses.dataclass(frozen=True)
class Spec:
    """How a schedule repeats: ``every_seconds`` or ``cron``, one of the
    two."""

    every_seconds: int | None = None
    cron: str | None = None

    @classmethod
    def of(cls, every_seconds: int | None, cron: str | None) -> 'Spec':
        """A checked ``Spec``.

        :raises InvalidSchedule: neither or both are given, or the one
            given is invalid.
        """
        if (every_seconds is None) == (cron is None):
            raise InvalidSchedule('a schedule has an interval (every) or a '
                                  'cron expression, one of the two')
        if every_seconds is None:
            return cls(cron=check_cron(typing.cast(str, cron)))
        return cls(every_seconds=check_every(every_seconds))

    def interval(self) -> datetime.timedelta:
        """The interval of a ``Spec`` with ``every_seconds``."""
        return datetime.timedelta(seconds=typing.cast(int,
                                                      self.every_seconds))

    def after(self, moment: datetime.datetime,
              anchor: datetime.datetime) -> datetime.datetime:
        """The first tick strictly after ``moment``.

        :param anchor: a tick of the series (an interval's ticks are
            ``anchor`` plus whole intervals); unused by a cron expression.
        """
        if self.cron is not None:
            following: datetime.datetime = croniter.croniter(
                self.cron, moment).get_next(datetime.datetime)
            return following
        every = self.interval()
        if moment < anchor:
            return anchor
        return anchor + ((moment - anchor) // every + 1) * every


def first_tick(spec: Spec, now: datetime.datetime) -> datetime.datetime:
    """The first tick of a schedule created at ``now``: one interval after
    ``now``'s second, or the cron expression's first match after it."""
    start = now.replace(microsecond=0)
    if spec.cron is not None:
        return spec.after(start, start)
    return start + spec.interval()


@dataclasses.dataclass(frozen=True)
class Due:
    """What to do with a schedule whose ``next_tick_at`` has come."""

    #: The tick to create the order of: the latest at or before now.
    tick: datetime.datetime
    #: The schedule's next ``next_tick_at``: the first tick after now.
    following: datetime.datetime
    #: Ticks before ``tick`` that get no order of their own: 0 unless no
    #: daemon ran at their time.
    missed: int


def due(spec: Spec, next_tick_at: datetime.datetime,
        now: datetime.datetime) -> Due:
    """The ``Due`` of a schedule whose ``next_tick_at`` is at or before
    ``now``: every tick from ``next_tick_at`` to ``now`` makes one order,
    for the latest of them."""
    following = spec.after(now, next_tick_at)
    if spec.cron is not None:
        tick = max(next_tick_at, croniter.croniter(
            spec.cron, following).get_prev(datetime.datetime))
        missed = 0
        probe = next_tick_at
        # Counted for the log line only.
        while missed < _MAX_COUNTED and probe < tick:
            probe = spec.after(probe, next_tick_at)
            missed += 1
        return Due(tick=tick, following=following, missed=missed)
    every = spec.interval()
    tick = following - every
    return Due(tick=tick, following=following,
               missed=(tick - next_tick_at) // every)


def order_key(schedule_id: str, tick: datetime.datetime) -> str:
    """The idempotency key of the order of ``schedule_id``'s ``tick``:
    ``schedule:<id>:<tick in ISO 8601, UTC>``."""
    return _KEY % (schedule_id,
                   tick.replace(tzinfo=None).isoformat(timespec='seconds') +
                   'Z')
