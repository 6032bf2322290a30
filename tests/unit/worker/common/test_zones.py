"""Cron expressions in time zones: the ticks of the days that daylight
saving time changes, by the arithmetic alone (no clock, no sleep)."""

import datetime

import pytest

from worker.common import ticks
from worker.common import zones

D = datetime.datetime
PARIS = 'Europe/Paris'
NEW_YORK = 'America/New_York'


def _series(expression, zone, start, count):
    """``count`` ticks after ``start`` (naive UTC)."""
    spec = ticks.Spec.of(None, expression, zone)
    found, moment = [], start
    for _ in range(count):
        moment = spec.after(moment, start)
        found.append(moment)
    return found


def test_a_daily_time_is_read_on_the_zone_s_wall_clock():
    # 09:00 in Paris is 08:00 UTC in winter, 07:00 UTC in summer.
    assert _series('0 9 * * *', PARIS, D(2026, 1, 10), 1) == [
        D(2026, 1, 10, 8)]
    assert _series('0 9 * * *', PARIS, D(2026, 7, 10), 1) == [
        D(2026, 7, 10, 7)]


def test_a_daily_time_in_the_spring_gap_runs_once_an_hour_later():
    # Paris, 29 March 2026: 02:00 CET jumps to 03:00 CEST. 02:30 does
    # not exist: it runs once, at 03:30 CEST (01:30 UTC).
    assert _series('30 2 * * *', PARIS, D(2026, 3, 27, 12), 3) == [
        D(2026, 3, 28, 1, 30),      # 02:30 CET
        D(2026, 3, 29, 1, 30),      # 03:30 CEST, the gap's 02:30
        D(2026, 3, 30, 0, 30)]      # 02:30 CEST


def test_a_gap_time_that_is_also_a_match_is_one_tick():
    # 02:30 (moved to 03:30 CEST) and 03:30 are the same instant.
    assert _series('30 2,3 * * *', PARIS, D(2026, 3, 29), 3) == [
        D(2026, 3, 29, 1, 30), D(2026, 3, 30, 0, 30),
        D(2026, 3, 30, 1, 30)]


def test_new_york_s_spring_gap():
    # 8 March 2026: 02:00 EST jumps to 03:00 EDT; 02:30 runs at 03:30 EDT.
    assert _series('30 2 * * *', NEW_YORK, D(2026, 3, 7, 12), 2) == [
        D(2026, 3, 8, 7, 30), D(2026, 3, 9, 6, 30)]


def test_a_daily_time_in_the_repeated_hour_runs_once_at_its_first():
    # New York, 1 November 2026: 02:00 EDT falls back to 01:00 EST.
    # 01:30 happens twice, at 05:30 and 06:30 UTC: it runs at 05:30.
    assert _series('30 1 * * *', NEW_YORK, D(2026, 10, 31, 12), 2) == [
        D(2026, 11, 1, 5, 30), D(2026, 11, 2, 6, 30)]


def test_the_repeated_hour_s_second_pass_makes_no_tick():
    # Every 15 minutes: 01:00-01:45 EDT run, their repeats in EST do not;
    # 02:00 EST (07:00 UTC) is next.
    found = _series('*/15 * * * *', NEW_YORK, D(2026, 11, 1, 4, 50), 6)
    assert found == [D(2026, 11, 1, 5), D(2026, 11, 1, 5, 15),
                     D(2026, 11, 1, 5, 30), D(2026, 11, 1, 5, 45),
                     D(2026, 11, 1, 7), D(2026, 11, 1, 7, 15)]


def test_paris_fall_back_runs_the_repeated_time_once():
    # 25 October 2026: 03:00 CEST falls back to 02:00 CET.
    assert _series('30 2 * * *', PARIS, D(2026, 10, 24, 12), 2) == [
        D(2026, 10, 25, 0, 30), D(2026, 10, 26, 1, 30)]


def test_a_daemon_looking_inside_the_repeated_hour_finds_the_next_tick():
    # At 06:10 UTC (01:10 EST, the second pass), the next quarter hour
    # is not 01:15 EST (a repeat) but 02:00 EST.
    spec = ticks.Spec.of(None, '*/15 * * * *', NEW_YORK)
    assert spec.after(D(2026, 11, 1, 6, 10), D(2026, 11, 1)) == \
        D(2026, 11, 1, 7)


def test_the_latest_tick_at_or_before_a_moment_across_the_gap():
    assert zones.at_or_before('30 2 * * *', D(2026, 3, 29, 1, 45),
                              PARIS) == D(2026, 3, 29, 1, 30)
    assert zones.at_or_before('30 2 * * *', D(2026, 3, 29, 1, 29),
                              PARIS) == D(2026, 3, 28, 1, 30)


def test_missed_ticks_are_backfilled_up_to_the_bound_in_the_zone():
    spec = ticks.Spec.of(None, '30 2 * * *', PARIS)
    # Down from 27 March to 30 March, 12:00 UTC: 4 ticks missed.
    due = ticks.due(spec, D(2026, 3, 27, 1, 30), D(2026, 3, 30, 12), 3)
    assert due.ticks == (D(2026, 3, 28, 1, 30), D(2026, 3, 29, 1, 30),
                         D(2026, 3, 30, 0, 30))
    assert due.missed == 1
    assert due.following == D(2026, 3, 31, 0, 30)


def test_utc_is_the_default_and_keeps_croniter_s_ticks():
    assert ticks.Spec.of(None, '30 2 * * *').timezone == 'UTC'
    assert _series('30 2 * * *', 'UTC', D(2026, 3, 28, 12), 2) == [
        D(2026, 3, 29, 2, 30), D(2026, 3, 30, 2, 30)]


@pytest.mark.parametrize('name', [
    'Europe/Pariss', 'Mars/Olympus', '../etc/passwd', '', 'x' * 65,
    'europe paris'])
def test_an_unknown_time_zone_is_refused_by_name(name):
    with pytest.raises(ticks.InvalidSchedule, match='time zone'):
        ticks.Spec.of(None, '0 3 * * *', name)
    if name:
        with pytest.raises(ticks.InvalidSchedule) as raised:
            ticks.check_timezone(name)
        assert repr(name[:60]) in str(raised.value) or len(name) > 64


def test_a_time_zone_that_is_not_a_string_is_refused():
    with pytest.raises(ticks.InvalidSchedule, match='not int'):
        ticks.check_timezone(7)


def test_an_interval_takes_no_time_zone():
    with pytest.raises(ticks.InvalidSchedule, match='cron expression only'):
        ticks.Spec.of(60, None, PARIS)
    assert ticks.Spec.of(60, None, 'UTC').every_seconds == 60
