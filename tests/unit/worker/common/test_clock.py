"""The database's clock: the offset measured as NTP does, the bound, the
test variable that shifts a process's own clock."""

import datetime
import types

from worker.common import clock

LOCAL = datetime.datetime(2026, 11, 25, 12, 0, 0)


class _Database:
    """Answers ``database_time`` with this host's time plus ``ahead``; the
    query takes ``round_trip`` seconds of the monotonic clock."""

    def __init__(self, ahead, round_trip, ticks):
        self.ahead = ahead
        self.round_trip = round_trip
        self.ticks = ticks
        self.repositories = types.SimpleNamespace(
            services=types.SimpleNamespace(database_time=self._time))

    def _time(self, session):
        # The server reads its clock half-way through the round trip.
        self.ticks[0] += self.round_trip
        return LOCAL + datetime.timedelta(
            seconds=self.ahead + self.round_trip / 2)


def _clock(ahead, round_trip=0.2, **kwargs):
    ticks = [100.0]
    database = _Database(ahead, round_trip, ticks)
    return clock.DatabaseClock(database, 10.0, local=lambda: LOCAL,
                               monotonic=lambda: ticks[0], **kwargs)


def test_the_offset_is_the_servers_time_at_the_midpoint_of_the_trip():
    database_clock = _clock(ahead=120.0)
    assert database_clock.offset_seconds is None
    assert database_clock.now() == LOCAL      # before any measurement
    assert not database_clock.trusted and not database_clock.too_far

    assert database_clock.measure(None) == 120.0
    assert database_clock.now() == LOCAL + datetime.timedelta(seconds=120)
    assert database_clock.too_far and not database_clock.trusted


def test_a_clock_off_beyond_the_bound_logs_an_error_at_each_measure(caplog):
    database_clock = _clock(ahead=-30.0, judges_liveness=True)
    database_clock.measure(None)
    database_clock.measure(None)
    errors = [r for r in caplog.records if r.levelname == 'ERROR']
    assert len(errors) == 2
    assert '30.0s ahead of the database' in errors[0].getMessage()
    assert 'takes back no step' in errors[0].getMessage()


def test_a_clock_within_the_bound_is_corrected_quietly(caplog):
    database_clock = _clock(ahead=2.5)
    database_clock.measure(None)
    assert not database_clock.too_far and database_clock.trusted
    assert database_clock.now() == LOCAL + datetime.timedelta(seconds=2.5)
    assert not caplog.records


def test_a_slow_round_trip_is_logged_with_the_error_it_allows(caplog):
    database_clock = _clock(ahead=0.0, round_trip=3.0)
    assert database_clock.measure(None) == 0.0
    assert 'may be off by up to 1.5s' in caplog.text


def test_the_test_variable_shifts_this_processs_own_clock(monkeypatch):
    monkeypatch.setenv(clock.SKEW_VARIABLE, '-120')
    shifted = clock.local_utcnow()
    monkeypatch.delenv(clock.SKEW_VARIABLE)
    difference = (clock.local_utcnow() - shifted).total_seconds()
    assert 119 < difference < 121
