"""Cron expressions read on the wall clock of an IANA time zone.

A schedule's cron expression matches wall-clock times of its time zone
(``Europe/Paris``, ``America/New_York``; ``UTC`` by default); its ticks
are the UTC instants of those times. Two days a year the wall clock is
not a line, and this module decides, as doc/operations.md says:

- **Spring forward** (the gap, 02:00-03:00 in Paris): a time that does
  not exist runs once, moved forward by the length of the gap, so a
  daily 02:30 runs at 03:30 local time (01:30 UTC in Paris). If the
  expression also matches that instant (``30 2,3 * * *``), it is one
  tick, not two.
- **Fall back** (the repeated hour, 01:00-02:00 in New York): a time
  that happens twice runs once, at its first occurrence (fold 0 of PEP
  495, still on summer time). The repeated hour's second pass makes no
  tick at all, even of an expression that matches every minute.

The search runs on naive wall-clock times (croniter, which does not see
the zone) and maps each match to its instant: matches in a gap map
into the instants of the hour after it, out of wall-clock order, so the
earliest instant is taken over a window of ``_SETTLE`` wall-clock time,
longer than any change of offset. Times in and out are naive UTC; the
time is a parameter, nothing here reads a clock.
"""

import datetime
import typing
import zoneinfo

import croniter

#: The default time zone: a schedule without one ticks in UTC.
UTC = 'UTC'
#: The longest zone name (its column).
MAX_ZONE_LENGTH = 64

# Longer than any change of a zone's offset (Troll's is two hours): a
# match this far on the wall clock past the best candidate cannot map to
# an earlier instant.
_SETTLE = datetime.timedelta(hours=3)
# Matches read at most for one tick: a minute-by-minute expression
# inside a window of _SETTLE, with room.
_MAX_CANDIDATES = 1000
_ONE_MICROSECOND = datetime.timedelta(microseconds=1)
_ZERO = datetime.timedelta(0)


class UnknownTimeZone(ValueError):
    """A name that is not an IANA time zone this host knows."""


def zone(name: str) -> zoneinfo.ZoneInfo:
    """The ``ZoneInfo`` of an IANA time zone name, such as
    ``Europe/Paris``.

    :raises UnknownTimeZone: not a string, too long, or not a zone of
        the host's tz database (nor of the ``tzdata`` package); the
        message names it.
    """
    if not isinstance(name, str):
        raise UnknownTimeZone('a time zone is a string such as '
                              '"Europe/Paris", not %s' % type(name).__name__)
    if not name or len(name) > MAX_ZONE_LENGTH:
        raise UnknownTimeZone('unknown time zone %r: an IANA time zone '
                              'name has 1 to %d characters, such as '
                              '"Europe/Paris"' % (name[:80], MAX_ZONE_LENGTH))
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        # ValueError: a path (``../x``) or a name that is not a key.
        raise UnknownTimeZone('unknown time zone %r: not an IANA time '
                              'zone name (such as "Europe/Paris", '
                              '"America/New_York" or "UTC")' % name
                              ) from None


def to_instant(wall: datetime.datetime,
               tz: zoneinfo.ZoneInfo) -> datetime.datetime:
    """The naive UTC instant of a naive wall-clock time of ``tz``: a time
    in a gap is moved forward by the gap, a repeated time is its first
    occurrence (fold 0)."""
    aware = wall.replace(tzinfo=tz, fold=0)
    return aware.astimezone(datetime.timezone.utc).replace(tzinfo=None)


def _offset(instant: datetime.datetime,
            tz: zoneinfo.ZoneInfo) -> datetime.timedelta:
    """The offset of ``tz`` at a naive UTC instant."""
    aware = instant.replace(tzinfo=datetime.timezone.utc).astimezone(tz)
    # A ZoneInfo always has an offset; typed Optional by datetime.
    return typing.cast(datetime.timedelta, aware.utcoffset())


def _offsets_near(instant: datetime.datetime,
                  tz: zoneinfo.ZoneInfo) -> list[datetime.timedelta]:
    return [_offset(instant + shift, tz)
            for shift in (-_SETTLE, datetime.timedelta(0), _SETTLE)]


def after(expression: str, moment: datetime.datetime,
          name: str) -> datetime.datetime:
    """The first tick of ``expression`` in zone ``name`` strictly after
    ``moment``; naive UTC in and out."""
    if name == UTC:
        following: datetime.datetime = croniter.croniter(
            expression, moment).get_next(datetime.datetime)
        return following
    tz = zone(name)
    # The earliest wall-clock time whose instant may follow ``moment``.
    start = moment + min(_offsets_near(moment, tz))
    return _closest(croniter.croniter(expression, start), tz,
                    lambda instant: instant > moment, 1)


def at_or_before(expression: str, moment: datetime.datetime,
                 name: str) -> datetime.datetime:
    """The last tick of ``expression`` in zone ``name`` at or before
    ``moment``; naive UTC in and out."""
    if name == UTC:
        latest: datetime.datetime = croniter.croniter(
            expression, moment + _ONE_MICROSECOND).get_prev(
                datetime.datetime)
        return latest
    tz = zone(name)
    start = moment + max(_offsets_near(moment, tz)) + _ONE_MICROSECOND
    return _closest(croniter.croniter(expression, start), tz,
                    lambda instant: instant <= moment, -1)


def _closest(search, tz, wanted, direction):
    """The closest ``wanted`` instant among the matches of ``search``,
    read forward (``direction`` 1: the earliest) or back (-1: the
    latest) until a match is ``_SETTLE`` past the best so far."""
    step = search.get_next if direction > 0 else search.get_prev
    best = best_wall = None
    for _ in range(_MAX_CANDIDATES):
        wall = step(datetime.datetime)
        if best_wall is not None and (wall - best_wall) * direction > _SETTLE:
            return best
        instant = to_instant(wall, tz)
        if wanted(instant) and (
                best is None or (best - instant) * direction > _ZERO):
            best, best_wall = instant, wall
            if _no_change_around(instant, tz):
                return best
    if best is None:
        raise ValueError('no tick found in %d matches' % _MAX_CANDIDATES)
    return best


def _no_change_around(instant, tz):
    """True if ``tz`` keeps one offset within ``_SETTLE`` of
    ``instant``: no other match can map before (or after) it."""
    return len(set(_offsets_near(instant, tz))) == 1
