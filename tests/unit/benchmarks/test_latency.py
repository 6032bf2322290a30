"""The latency benchmark's arithmetic: percentiles, and worker times put
back on the host's clock by the offset in force when they were written."""

import datetime

from tests.benchmarks import latency
from tests.benchmarks import statements

_T0 = datetime.datetime(2026, 1, 1, 12, 0, 0)


def test_percentiles_are_nearest_rank():
    values = list(range(1, 101))
    assert latency.percentile(values, 0.50) == 50
    assert latency.percentile(values, 0.99) == 99
    assert latency.percentile([7.0], 0.99) == 7.0
    assert latency.percentile([], 0.99) is None


def _offsets(beats):
    log = latency.OffsetLog(database=None)
    log._beats = beats
    return log


def test_a_worker_time_loses_the_offset_of_its_last_heartbeat():
    second = datetime.timedelta(seconds=1)
    offsets = _offsets({'1@h': [(_T0, 0.005), (_T0 + 10 * second, -0.002)]})
    assert offsets.host('1@h', _T0 + second) == \
        _T0 + second - datetime.timedelta(milliseconds=5)
    assert offsets.host('1@h', _T0 + 11 * second) == \
        _T0 + 11 * second + datetime.timedelta(milliseconds=2)
    # Before its first heartbeat was read: that one's offset.
    assert offsets.host('1@h', _T0 - second) == \
        _T0 - second - datetime.timedelta(milliseconds=5)
    # A process never seen, or no time: as written.
    assert offsets.host('2@h', _T0) == _T0
    assert offsets.host('1@h', None) is None


def test_statements_per_step_are_between_two_readings():
    assert statements.per_step(None, (5, 1), 2) == {}
    figures = statements.per_step((10, 4), (30, 24), 10)
    assert (figures['statements_per_step'],
            figures['executemany_rows_per_step']) == (2.0, 2.0)
