"""The benchmark's table: the receive floor's row beside the target it
bounds."""

from tests.benchmarks import report


def _pool(floor, graphile_rate=680.0):
    return {'one': {'rate': 400.0}, 'receive_floor': floor,
            'graphile_one': {'rate': graphile_rate}}


def test_the_floor_is_put_against_the_rate_the_one_process_target_asks():
    row, = report._rows_receive_floor(_pool(
        {'rate': 1530.0, 'cpu_ms_per_message': 0.55}))
    assert row.figure == '1530 messages/s, 0.55 ms CPU each'
    assert row.reference == \
        '1.5x Graphile, 1 process: 1020 orders/s; ours: 400.0'
    assert row.ratio == 1.5
    assert row.met is None


def test_a_floor_without_a_peer_figure_has_no_ratio():
    row, = report._rows_receive_floor(_pool(
        {'rate': 1530.0, 'cpu_ms_per_message': 0.55}, graphile_rate=None))
    assert row.ratio is None
    assert row.reference.startswith('1.5x Graphile, 1 process: ? orders/s')


def test_a_failed_floor_is_an_error_row_and_no_floor_no_row():
    row, = report._rows_receive_floor(_pool({'error': 'RuntimeError: x'}))
    assert row.figure == 'ERROR RuntimeError: x'
    assert report._rows_receive_floor({'one': {'rate': 1.0}}) == []
