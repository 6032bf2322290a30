"""When a schedule's orders are due: durations, cron expressions and the
arithmetic of ticks.

A schedule runs ``every`` a duration (``30s``, ``5m``, ``1h``, ``30d``)
or at the times of a five-field cron expression, read by croniter (the
cron library of Airflow and others, kept by pallets-eco) on the wall
clock of the schedule's IANA time zone, UTC by default
(``worker.common.zones`` says what a daylight saving change does). Its
ticks are whole seconds: an interval's series starts one interval after
the second the schedule was created, a cron expression's ticks are its
matches.

``due(spec, next_tick_at, now, backfill)`` says what a retry daemon does
with a schedule whose ``next_tick_at`` has come: the ticks it creates
orders for, the latest ``backfill`` ticks at or before ``now`` (the ticks
missed while every daemon was down before those make none), and the
first tick after ``now``, which becomes the schedule's ``next_tick_at``.
The time is a parameter: nothing here reads a clock.
"""

import dataclasses
import datetime
import re
import typing

import croniter

from worker.common import inputs
from worker.common import zones

#: The shortest and longest interval: one second, ten years.
MIN_EVERY_SECONDS = 1
MAX_EVERY_SECONDS = 3650 * 86400

#: The longest cron expression (its column).
MAX_CRON_LENGTH = 255
_CRON_CHARACTERS = re.compile(r'^[0-9A-Za-z*/,?#\- ]*$')
# The fields of a cron expression, the values each takes, and their
# numeric range.
_FIELDS = (('minute', '0-59'), ('hour', '0-23'), ('day-of-month', '1-31'),
           ('month', '1-12 or jan-dec'), ('day-of-week', '0-7 or sun-sat'))
_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
# Where the search for an expression's first match starts: any moment
# would do.
_REFERENCE = datetime.datetime(2000, 1, 1)

_UNITS = {'s': 1, 'm': 60, 'h': 3600, 'd': 86400}
_DURATION = re.compile(r'^([0-9]{1,10})([smhd])$')

#: Missed ticks of a cron expression counted at most, for a log line.
_MAX_COUNTED = 10000
_ONE_SECOND = datetime.timedelta(seconds=1)

#: The idempotency key of a tick's order: ``schedule:<id>:<tick>``.
_KEY = 'schedule:%s:%s'
_TRIGGER_KEY = 'schedule:%s:trigger:%s'

#: What a tick does while the order of the one before is still open
#: (PENDING or CANCELLING): create its order beside it (``allow``, the
#: default, as before overlap policies), make no order (``skip``), cancel
#: the open order and create (``cancel-previous``), or remember the tick
#: and create its order once the open one ends (``buffer-one``).
OVERLAP_ALLOW = 'allow'
OVERLAP_SKIP = 'skip'
OVERLAP_CANCEL_PREVIOUS = 'cancel-previous'
OVERLAP_BUFFER_ONE = 'buffer-one'
OVERLAP_POLICIES = (OVERLAP_SKIP, OVERLAP_ALLOW, OVERLAP_CANCEL_PREVIOUS,
                    OVERLAP_BUFFER_ONE)
#: The most missed ticks one look may create the orders of.
MAX_BACKFILL = 1000


class InvalidSchedule(ValueError):
    """A duration, cron expression, time zone, overlap policy or
    combination of them that is no schedule."""


def check_timezone(name: str) -> str:
    """``name`` if it is an IANA time zone this host knows.

    :raises InvalidSchedule: it is not; the message names it.
    """
    try:
        zones.zone(name)
    except zones.UnknownTimeZone as exc:
        raise InvalidSchedule(str(exc)) from None
    return name


def check_overlap(policy: str) -> str:
    """``policy`` if it is one of ``OVERLAP_POLICIES``.

    :raises InvalidSchedule: it is not.
    """
    if policy not in OVERLAP_POLICIES:
        raise InvalidSchedule('the overlap policy is one of %s, not %s'
                              % (', '.join(OVERLAP_POLICIES),
                                 inputs.short(policy)))
    return policy


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
    if _valid_alone(index, field):
        return
    raise InvalidSchedule(
        'the %s field %r of the cron expression %r is not valid: %s; %s '
        'takes %s, *, and lists (,), ranges (-) and steps (/) of them'
        % (name, field, expression, _what_is_wrong(index, field), name,
           allowed))


def _valid_alone(index: int, field: str) -> bool:
    """True if croniter takes ``field`` as field ``index`` of an
    expression whose other fields are ``*``."""
    probe = ['*'] * len(_FIELDS)
    probe[index] = field
    # croniter's random (R) and hashed (H) values would give a schedule
    # another tick at each reading.
    tokens = set(re.split('[,/-]', field.upper()))
    return not tokens & {'R', 'H'} and bool(
        croniter.croniter.is_valid(' '.join(probe)))


def _what_is_wrong(index: int, field: str) -> str:
    """The first item of a list field that is not valid, and why: a
    number out of the field's range is named as such."""
    low, high = _RANGES[index]
    items = field.split(',')
    item = next((item for item in items if not _valid_alone(index, item)),
                field)
    if item.upper() in ('R', 'H') or item.upper().startswith(('H(', 'R(')):
        return 'random (R) and hashed (H) values are not supported'
    values, _, step = item.partition('/')
    for value in values.split('-'):
        if value.isdigit() and not low <= int(value) <= high:
            return '%s is out of range %d-%d' % (value, low, high)
    if step and not (step.isdigit() and int(step) >= 1):
        return 'the step %r is not a positive integer' % step
    if item == '':
        return 'an empty item in a list'
    return '%r is not a value, range or step of this field' % item


@dataclasses.dataclass(frozen=True)
class Spec:
    """How a schedule repeats: ``every_seconds`` or ``cron``, one of the
    two; a cron expression is read in ``timezone``."""

    every_seconds: int | None = None
    cron: str | None = None
    timezone: str = zones.UTC

    @classmethod
    def of(cls, every_seconds: int | None, cron: str | None,
           timezone: str | None = None) -> 'Spec':
        """A checked ``Spec``.

        :param timezone: an IANA time zone name for ``cron``; None or
            ``UTC`` for UTC. An interval counts seconds, in no zone.
        :raises InvalidSchedule: neither or both are given, the one given
            is invalid, the zone unknown, or an interval has a zone other
            than UTC.
        """
        if (every_seconds is None) == (cron is None):
            raise InvalidSchedule('a schedule has an interval (every) or a '
                                  'cron expression, one of the two')
        timezone = check_timezone(zones.UTC if timezone is None
                                  else timezone)
        if every_seconds is None:
            return cls(cron=check_cron(typing.cast(str, cron)),
                       timezone=timezone)
        if timezone != zones.UTC:
            raise InvalidSchedule('a time zone (%s) applies to a cron '
                                  'expression only: an interval counts '
                                  'seconds, in no zone' % timezone)
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
            return zones.after(self.cron, moment, self.timezone)
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

    #: The ticks to create the orders of, oldest first: the latest
    #: ``backfill`` at or before now (one unless daemons were down).
    ticks: tuple[datetime.datetime, ...]
    #: The schedule's next ``next_tick_at``: the first tick after now.
    following: datetime.datetime
    #: Ticks before ``ticks`` that get no order: 0 unless no daemon ran
    #: at their time (counted up to 10,000, for a log line).
    missed: int

    @property
    def tick(self) -> datetime.datetime:
        """The latest tick, which the schedule records as its last."""
        return self.ticks[-1]


def due(spec: Spec, next_tick_at: datetime.datetime,
        now: datetime.datetime, backfill: int = 1) -> Due:
    """The ``Due`` of a schedule whose ``next_tick_at`` is at or before
    ``now``: of the ticks from ``next_tick_at`` to ``now``, the latest
    ``backfill`` (at least one) make an order each; those before them
    make none."""
    following = spec.after(now, next_tick_at)
    wanted = max(1, min(backfill, MAX_BACKFILL))
    if spec.cron is not None:
        chosen = [max(next_tick_at, zones.at_or_before(
            spec.cron, following - _ONE_SECOND, spec.timezone))]
        while len(chosen) < wanted:
            earlier = zones.at_or_before(spec.cron, chosen[-1] - _ONE_SECOND,
                                         spec.timezone)
            if earlier < next_tick_at:
                break
            chosen.append(earlier)
        missed = 0
        probe = next_tick_at
        # Counted for the log line only.
        while missed < _MAX_COUNTED and probe < chosen[-1]:
            probe = spec.after(probe, next_tick_at)
            missed += 1
        return Due(ticks=tuple(reversed(chosen)), following=following,
                   missed=missed)
    every = spec.interval()
    latest = following - every
    count = min(wanted, (latest - next_tick_at) // every + 1)
    first = latest - (count - 1) * every
    return Due(ticks=tuple(first + index * every for index in range(count)),
               following=following, missed=(first - next_tick_at) // every)


def trigger_key(schedule_id: str, nonce: str) -> str:
    """The idempotency key of an order triggered outside the series:
    ``schedule:<id>:trigger:<nonce>``."""
    return _TRIGGER_KEY % (schedule_id, nonce)


def order_key(schedule_id: str, tick: datetime.datetime) -> str:
    """The idempotency key of the order of ``schedule_id``'s ``tick``:
    ``schedule:<id>:<tick in ISO 8601, UTC>``."""
    return _KEY % (schedule_id,
                   tick.replace(tzinfo=None).isoformat(timespec='seconds') +
                   'Z')
