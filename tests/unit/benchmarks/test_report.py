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


def _plan(uses_index, sorts, sort_allowed=None):
    plan = {'uses_index': uses_index, 'sorts': sorts}
    if sort_allowed is not None:
        plan['sort_allowed'] = sort_allowed
    return plan


def test_a_plan_may_sort_only_where_its_record_allows_it():
    allowed = report._row_plans('PostgreSQL', 1000, [
        _plan(True, False), _plan(True, True, sort_allowed=True)])
    assert (allowed.figure, allowed.met) == (
        '2 of 2 by their index, no sort', True)
    refused = report._row_plans('PostgreSQL', 1000, [
        _plan(True, True), _plan(False, True, sort_allowed=True)])
    assert (refused.figure, refused.met) == (
        '0 of 2 by their index, no sort', False)


def test_the_bulk_cancel_rows_give_the_rate_and_the_latencies_side_by_side():
    figures = {'p50': 80.0, 'p99': 300.0, 'max': 400.0, 'throughput': 9.5}
    rate, others = report._rows_bulk_cancel({
        'backend': 'postgresql', 'held': 5000, 'batch_size': 200,
        'cancel_rate': 812.4, 'baseline': figures,
        'during': dict(figures, p99=600.0, throughput=9.0)})
    assert (rate.figure, rate.met) == ('812 orders/s', None)
    assert others.figure == '600.0 ms (9.0/s)'
    assert others.reference == '300.0 ms (9.5/s) without'
    assert others.ratio == 2.0
