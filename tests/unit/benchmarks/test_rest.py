"""The REST API's benchmark: its percentiles, its pacing and its rows."""

import time

from tests.benchmarks import http_load
from tests.benchmarks import rest_report


def test_percentiles_are_nearest_rank():
    values = [float(number) for number in range(1, 101)]
    assert http_load.percentile(values, 0.50) == 50.0
    assert http_load.percentile(values, 0.99) == 99.0
    assert http_load.percentile([7.0], 0.99) == 7.0


def test_a_total_is_split_over_the_clients_to_the_last_request():
    assert http_load.split(10, 4) == [3, 3, 2, 2]
    assert sum(http_load.split(1000, 16)) == 1000


class _Pool:
    """``http_load.Pool``'s interface, its clients nothing."""

    def __init__(self, size):
        self.clients = [None] * size

    def each(self, function, counts):
        return [function(client, count)
                for client, count in zip(self.clients, counts)]


def test_open_loop_times_a_request_from_when_it_was_due():
    # One client, each request taking 50 ms, asked for every 10 ms: the
    # client falls behind, and the latency counts the wait for it.
    def slow(_):
        time.sleep(0.05)
        return True
    paced = http_load.open_loop(_Pool(1), 100.0, 5, slow)
    assert paced['failed'] == 0
    assert paced['latency']['max_ms'] >= 200.0
    assert paced['latency']['p50_ms'] >= 100.0


def _result(plan_rows_removed):
    rate = {'requests': 100, 'failed': 0, 'seconds': 1.0,
            'client_cpu_ms': 1.0, 'server_cpu_ms': 3.0}
    plan = {'index': 'ix', 'uses_index': True, 'sorts': False,
            'rows_removed': plan_rows_removed, 'execution_ms': 10.0}
    page = {'requests': 10, 'failed': 0,
            'latency': {'p50_ms': 5.0, 'p99_ms': 9.0}}
    return {
        'auth': ['noauth'], 'clients': 16, 'gunicorn_workers': 2,
        'gunicorn_threads': 16, 'keystone_available': False,
        'creates': {'direct_one': dict(rate, rate=50.0),
                    'direct_threads': dict(rate, rate=200.0),
                    'http_noauth': dict(rate, rate=90.0)},
        'latency': {'at_rest': page, 'half_rate': dict(
            page, rate_asked=45.0, rate=45.0)},
        'orders_stored': 10, 'steps_queued': 10, 'messages_queued': 7,
        'listing': {'orders': 1000, 'project_orders': 500,
                    'first': dict(page, plan=dict(plan, rows_removed=0)),
                    'deep': dict(page, plan=plan, bounded_plan=dict(
                        plan, rows_removed=0, execution_ms=0.1))},
    }


def test_http_is_put_against_the_faster_direct_variant():
    first = rest_report.rows(_result(0))[0]
    assert first.reference == 'OrderAPI.create, 16 threads: 200 orders/s'
    assert first.ratio == 0.45
    assert first.met is False


def test_a_deep_page_that_drops_rows_before_its_own_is_not_met():
    plans = [row for row in rest_report.rows(_result(45000))
             if row.measurement.strip().startswith('its plan')]
    assert [row.met for row in plans] == [True, False]
    assert '45000 rows' in plans[1].measurement


def test_mariadb_gets_its_create_rows_without_a_second_keystone_row():
    result = _result(0)
    mariadb = {key: result[key] for key in (
        'auth', 'clients', 'gunicorn_workers', 'gunicorn_threads',
        'keystone_available', 'creates', 'orders_stored', 'steps_queued',
        'messages_queued')}
    table = rest_report.rows(dict(result, mariadb=mariadb))
    measurements = [row.measurement for row in table]
    assert any('noauth (X-Project-Id), MariaDB' in name
               for name in measurements)
    assert sum('keystone auth_token' in name for name in measurements) == 1
    assert table[-1].measurement.endswith('MariaDB')
    assert table[-1].met is True
