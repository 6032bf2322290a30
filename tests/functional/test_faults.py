"""Processes killed with SIGKILL, broker and database outages.

Real barbican-worker and barbican-retry processes, the real broker and
databases; the test plugin records every plugin call with its token.
"""

import os
import re
import socket
import subprocess
import time

import pytest

from tests.functional import probes
from tests.functional import processes
from tests import plugin as test_plugin
from worker.db import orders
from worker.db import retry_tasks
from worker.db import steps

FAST = {
    'DEFAULT': {'service_down_time': 3, 'report_interval': 1},
    'scheduler': {'schedule_period_seconds': 1, 'schedule_jitter': 0.2,
                  'dispatch_deadline_seconds': 5, 'cast_timeout_seconds': 2,
                  'max_pass_seconds': 5, 'retry_lock_timeout_seconds': 20},
    'worker': {'workers': 1, 'certificate_plugin': 'recording',
               'unavailable_backoff_base_seconds': 0.5,
               'unavailable_backoff_max_seconds': 2},
    'simple_certificate': {'delay_before_update_seconds': 1},
}


_wait_for = processes.wait_for


def _counts(database):
    with database.session() as session:
        return orders.count_by_status(session)


_all_active = processes.all_active


def _assert_tokens_only_move_forward(plugin_log):
    """No two calls of a step ran under one token, none under an old one.

    Each step of an order has a token of its own; the plugin's call names
    the step (``issue_certificate_request`` runs ``process_type_order``).
    """
    by_step = {}
    for call in sorted(test_plugin.read_log(plugin_log),
                       key=lambda call: call['started']):
        by_step.setdefault((call['order'], call['step']), []).append(
            call['token'])
    for step, tokens in by_step.items():
        assert tokens == sorted(set(tokens)), (step, tokens)


def test_heartbeats_name_each_process_and_leave_on_stop(deployment):
    cluster = deployment(dict(FAST, worker=dict(FAST['worker'], workers=2)))
    workers = cluster.start('barbican-worker', 'worker')
    retry = cluster.start('barbican-retry', 'retry')
    workers.wait_for_log('serving topic', count=2)
    retry.wait_for_log('Retry scheduler started')
    listed = _wait_for(lambda: [s for s in cluster.manage_json(
        'service', 'list') if s['alive']] if len(cluster.manage_json(
            'service', 'list')) == 3 else None, 20, 'three services')
    assert sorted(s['kind'] for s in listed) == ['scheduler', 'worker',
                                                 'worker']
    # barbican-retry is one process; barbican-worker's master forks its two.
    children = set(workers.children()) | {retry.process.pid}
    assert {int(s['name'].split('@')[0]) for s in listed} == children
    assert all(s['name'].endswith('@' + s['host']) for s in listed)
    first = {s['name']: s['heartbeat_at'] for s in listed}

    def moved_on():
        again = {s['name']: s['heartbeat_at']
                 for s in cluster.manage_json('service', 'list')}
        return all(again.get(name, '') > first[name] for name in first)
    # report_interval is 1 s: every row moves on.
    _wait_for(moved_on, 30, 'every heartbeat to move on')

    assert workers.stop() == 0 and retry.stop() == 0
    assert cluster.manage_json('service', 'list') == []


def test_worker_killed_mid_step_is_replaced_and_the_order_completes(
        deployment, database):
    cluster = deployment(FAST)
    workers = cluster.start('barbican-worker', 'worker')
    retry = cluster.start('barbican-retry', 'retry')
    workers.wait_for_log('serving topic')
    [created] = cluster.manage_json(
        'order', 'create', '--type', 'certificate',
        '--meta', '{"hold_seconds": 60}')

    def owner():
        with database.session() as session:
            return steps.for_order(session, created['id'])[
                'process_type_order'].owner
    victim = _wait_for(owner, 20, 'a worker to claim the first step')
    workers.kill()                       # SIGKILL, in the middle of the step
    replacement = cluster.start('barbican-worker', 'worker-2')
    replacement.wait_for_log('serving topic')

    _wait_for(lambda: _all_active(database, 1), 30, 'the order to finish')
    assert 'stopped heartbeating' in retry.log()
    assert victim.split('@')[0] in retry.log()
    _assert_tokens_only_move_forward(cluster.plugin_log)
    assert cluster.manage_json('retry', 'list') == []
    assert replacement.stop() == 0 and retry.stop() == 0


def test_retry_daemon_killed_mid_pass_another_takes_over(
        deployment, database):
    cluster = deployment(FAST)
    workers = cluster.start('barbican-worker', 'worker')
    first = cluster.start('barbican-retry', 'retry-1')
    workers.wait_for_log('serving topic')
    cluster.manage_json('order', 'create', '--type', 'certificate',
                        '--count', '100')
    first.wait_for_log('Pass dispatched')
    first.kill()
    second = cluster.start('barbican-retry', 'retry-2')
    second.wait_for_log('Retry scheduler started')
    _wait_for(lambda: _all_active(database, 100), 60, 'all orders ACTIVE')
    _assert_tokens_only_move_forward(cluster.plugin_log)
    # The first daemon's lock, if it died holding it (killed in a pass
    # after the one awaited, the orders may all end before it is old), is
    # cleared by the second's first pass once its holder's heartbeat is
    # service_down_time old: waited for while the second runs.
    _wait_for(lambda: cluster.manage_json('lock', 'show')['held'] is False,
              60, 'no lock held')
    assert second.stop() == 0 and workers.stop() == 0
    assert cluster.manage_json('retry', 'list') == []
    assert cluster.manage_json('lock', 'show')['held'] is False


def _service_script(name):
    script = os.environ.get(name)
    if not script:
        pytest.skip('%s not set (run the suite with bin/run-tests.sh)'
                    % name)
    return script


def _run(script):
    subprocess.run([script], check=True, capture_output=True, timeout=120)


def _control(service):
    """Yield (stop, start) of a test server; it is running at the end."""
    stop = _service_script('BARBICAN_RETRY_TEST_%s_STOP' % service)
    start = _service_script('BARBICAN_RETRY_TEST_%s_START' % service)
    yield lambda: _run(stop), lambda: _run(start)
    _run(start)


@pytest.fixture
def broker_control():
    """Stop and start the test broker."""
    yield from _control('RABBITMQ')


OUTAGE_SECONDS = 60


def _log_marks_at_return(start, daemons):
    """Call ``start`` (a server's start script); returns ``(down, up)``,
    each ``{daemon: log length}``: taken before the last connection to
    the broker that was refused, and before the first that succeeded.
    What a daemon logged after ``up`` it logged with the broker back,
    however long the script took to return or to be seen."""
    port = int(os.environ['BARBICAN_RETRY_TEST_RABBITMQ_PORT'])
    down = {daemon: len(daemon.log()) for daemon in daemons}
    up = {}

    def connect():
        if not up:
            lengths = {daemon: len(daemon.log()) for daemon in daemons}
            try:
                socket.create_connection(('127.0.0.1', port), 1).close()
            except OSError:
                down.update(lengths)
                raise
            up.update(lengths)
        return True
    with probes.Probe(connect, 0.05):
        start()
        _wait_for(lambda: up, 60, 'the broker to accept connections')
    return down, up


def _after_return(text, down, up, back):
    """The lines of ``text`` after ``up`` and before the first match of
    ``back`` after ``down`` (it may come before ``up``)."""
    came = re.compile(back).search(text, down)
    assert came, 'no %r after the broker came back' % back
    return text[up:came.start()]


def _retry_rows(database):
    with database.session() as session:
        return len(retry_tasks.list_tasks(session))


@pytest.mark.parametrize('backend', ['postgresql'])
@pytest.mark.exclusive
def test_broker_outage_of_a_minute_loses_nothing(deployment, database,
                                                 broker_control):
    stop_broker, start_broker = broker_control
    # The status checks fall due in the middle of the outage.
    cluster = deployment(dict(FAST, simple_certificate={
        'delay_before_update_seconds': 20}))
    workers = cluster.start('barbican-worker', 'worker')
    retry = cluster.start('barbican-retry', 'retry')
    workers.wait_for_log('serving topic')
    cluster.manage_json('order', 'create', '--type', 'certificate',
                        '--count', '50',
                        '--meta', '{"unavailable_attempts": 1}')
    _wait_for(lambda: _retry_rows(database) == 50, 30,
              'every order to wait for its status check')

    stop_broker()
    time.sleep(OUTAGE_SECONDS)
    assert workers.process.poll() is None and retry.process.poll() is None
    # Passes went on, bounded in time; their casts failed and kept rows.
    assert retry.log().count('casts failed or timed out') >= 3
    assert _retry_rows(database) > 0
    down, up = _log_marks_at_return(start_broker, [workers, retry])
    _wait_for(lambda: _all_active(database, 50), 60,
              'every order ACTIVE after the broker came back')
    # Counted in passes and attempts after the broker's return, not in
    # seconds (a busy machine stretches both). The retry daemon casts
    # again in the pass under way or the next (whose casts may find their
    # connection waiting to retry).
    failed = _after_return(retry.log(), down[retry], up[retry],
                           r'Pass dispatched [1-9]')
    assert failed.count('Pass dispatched') <= 1, failed
    # The workers consume again within a default period (15 s) of the
    # broker's return: reconnection attempts at most rabbit_interval_max
    # (5 s) apart (worker/rpc.py set_defaults), the next one succeeds.
    log = workers.log()
    waits = [int(n) for n in re.findall(r'Trying again in (\d+) seconds',
                                        log)]
    assert waits and max(waits) <= 5, waits
    for connection in set(re.findall(r'\[([0-9a-f-]{36})\] AMQP server',
                                     log[down[workers]:])):
        failed = _after_return(log, down[workers], up[workers],
                               r'\[%s\] Reconnected' % connection)
        assert failed.count('[%s] AMQP server' % connection) <= 1, failed
    _assert_tokens_only_move_forward(cluster.plugin_log)
    assert workers.stop() == 0 and retry.stop() == 0


@pytest.mark.parametrize('backend', ['postgresql'])
@pytest.mark.exclusive
def test_queued_casts_survive_a_broker_restart(deployment, database,
                                               broker_control):
    stop_broker, start_broker = broker_control
    cluster = deployment(FAST)
    workers = cluster.start('barbican-worker', 'worker')
    workers.wait_for_log('serving topic')   # declares the durable queue
    assert workers.stop() == 0
    cluster.manage_json('order', 'create', '--type', 'certificate',
                        '--count', '20')      # queued, no consumer
    stop_broker()
    start_broker()
    # No retry daemon: only the queued casts can move the orders on.
    workers = cluster.start('barbican-worker', 'worker-2')
    _wait_for(lambda: sum(
        1 for call in test_plugin.read_log(cluster.plugin_log)
        if call['step'] == 'issue_certificate_request') == 20,
        30, 'the 20 queued casts to reach a worker')
    assert workers.stop() == 0


@pytest.fixture
def postgresql_control():
    """Stop and start the test PostgreSQL."""
    yield from _control('POSTGRESQL')


@pytest.mark.parametrize('backend', ['postgresql'])
@pytest.mark.exclusive
def test_database_outage_of_a_minute_is_survived(deployment, database,
                                                 postgresql_control):
    stop_db, start_db = postgresql_control
    cluster = deployment(FAST)
    workers = cluster.start('barbican-worker', 'worker')
    retry = cluster.start('barbican-retry', 'retry')
    workers.wait_for_log('serving topic')
    cluster.manage_json('order', 'create', '--type', 'certificate',
                        '--count', '50')
    stop_db()
    time.sleep(OUTAGE_SECONDS)
    assert workers.process.poll() is None and retry.process.poll() is None
    assert retry.log().count('Retry pass failed') >= 3
    start_db()
    database.dispose()
    _wait_for(lambda: _all_active(database, 50), 60,
              'every order ACTIVE after the database came back')
    _assert_tokens_only_move_forward(cluster.plugin_log)
    assert workers.stop() == 0 and retry.stop() == 0
