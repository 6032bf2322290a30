"""The benchmark's table: the receive floor's row beside the target it
bounds; an order's CPU by process."""

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


def test_an_orders_cpu_by_process_gives_what_the_cpus_allow():
    split = {'worker': 2.0, 'database': 0.8, 'broker': 0.5, 'casts': 0.7}
    one = {'processes': 1, 'cpus': 2, 'cpu_ms_per_order': split}
    row, = report._rows_cpu_per_order({'one': one, 'two': {}})
    assert row.figure == \
        'worker 2.00, database 0.80, broker 0.50, casts 0.70 ms'
    assert row.reference == 'all 4.00 ms: at most 500 orders/s on 2 CPUs'
