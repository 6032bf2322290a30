"""Processes whose clocks are off: one clock, the database's, for all.

A worker runs 120 s behind and a retry daemon 120 s ahead, beside a daemon
whose clock is right (each process's clock is shifted by
``BARBICAN_RETRY_TEST_CLOCK_SKEW_SECONDS``: libfaketime would make
Python's timed waits hang). Uncorrected, the fast daemon would see every
worker and the other daemon dead, 240 s and 120 s behind it (far more than
``service_down_time``), take back every running step and clear the other
daemon's lock. Each process measures its offset at each heartbeat and
corrects its times by it, so none of that happens; and each offset is
there for the operator to see.
"""

import pytest

from tests.functional import processes
from worker.common import clock

ORDERS = 200
SKEWED_WORKER = {clock.SKEW_VARIABLE: '-120'}
SKEWED_DAEMON = {clock.SKEW_VARIABLE: '120'}


def _options(max_offset, ports):
    return {
        'DEFAULT': {'service_down_time': 15, 'report_interval': 1,
                    'max_clock_offset_seconds': max_offset},
        'scheduler': {'schedule_period_seconds': 1,
                      'retry_lock_timeout_seconds': 60,
                      'max_pass_seconds': 20, 'cast_timeout_seconds': 5,
                      'dispatch_deadline_seconds': 60},
        'worker': {'workers': 2},
        'simple_certificate': {'delay_before_update_seconds': 1},
        'metrics': {'enabled': 'true', 'worker_port': ports[0],
                    'scheduler_port': ports[1]},
    }


def _sample(port, name):
    values = [float(line.rsplit(' ', 1)[1])
              for line in processes.scrape(port).splitlines()
              if line.startswith(name + ' ')]
    assert len(values) == 1, name
    return values[0]


def _run(deployment, database, max_offset):
    worker_port, fast_port, right_port = (processes.free_port()
                                          for _ in range(3))
    cluster = deployment(_options(max_offset, (worker_port, fast_port)))
    workers = cluster.start('barbican-worker', 'worker', SKEWED_WORKER)
    fast = cluster.start('barbican-retry', 'fast-daemon', SKEWED_DAEMON)
    workers.wait_for_log('serving topic', count=2)
    fast.wait_for_log('Retry scheduler started')
    # The second daemon's metrics on a port of its own.
    cluster.configure(_options(max_offset, (worker_port, right_port)))
    right = cluster.start('barbican-retry', 'right-daemon')
    right.wait_for_log('Retry scheduler started')

    cluster.manage_json('order', 'create', '--type', 'certificate',
                        '--count', str(ORDERS))
    processes.wait_for(lambda: processes.all_active(database, ORDERS), 120,
                       '%d orders ACTIVE' % ORDERS)

    listed = {row['name']: row for row in cluster.manage_json('service',
                                                              'list')}
    assert all(row['alive'] for row in listed.values()), listed
    offsets = sorted(round(row['clock_offset_seconds'])
                     for row in listed.values())
    assert offsets == [-120, 0, 120, 120], listed
    assert round(_sample(fast_port, 'barbican_retry_clock_offset_seconds')) \
        == -120
    assert round(_sample(worker_port,
                         'barbican_retry_clock_offset_seconds')) == 120
    for port in (fast_port, right_port):
        assert _sample(port, 'barbican_retry_orders_recovered_total') == 0
        assert _sample(port, 'barbican_retry_stale_locks_cleared_total') == 0
    for daemon in (workers, fast, right):
        assert daemon.stop() == 0
    return workers, fast, right


def test_clocks_off_by_minutes_are_corrected(deployment, database):
    """Within the bound: the fast daemon judges, by the database's time."""
    workers, fast, right = _run(deployment, database, max_offset=300)
    for daemon in (workers, fast, right):
        assert 'beyond max_clock_offset_seconds' not in daemon.log()


@pytest.mark.parametrize('backend', ['sqlite'])
def test_a_daemon_whose_clock_is_too_far_off_judges_no_one(
        deployment, database, backend):
    """Beyond the bound: errors at each heartbeat, and the fast daemon
    casts but takes nothing back (the other daemon does the judging)."""
    workers, fast, right = _run(deployment, database, max_offset=60)
    assert fast.log().count('beyond max_clock_offset_seconds') >= 2
    assert 'takes back no step and clears no lock' in fast.log()
    assert 'beyond max_clock_offset_seconds' in workers.log()
    assert 'takes back no step' not in workers.log()
    assert 'beyond max_clock_offset_seconds' not in right.log()
