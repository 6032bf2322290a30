"""What an operator runs: the manage commands, the status check, metrics."""

import datetime
import json
import subprocess
import time

import pytest

from tests.functional import counting
from tests.functional import probes
from tests.functional import processes
from worker.db import locks
from worker.db import models
from worker.db import retry_tasks
from worker.db import services
from worker.db import steps

# The commands read the database through the same repositories on every
# backend (tested on all three elsewhere); SQLite keeps these tests quick.
pytestmark = pytest.mark.parametrize('backend', ['sqlite'])

FAST = {
    'DEFAULT': {'service_down_time': 3, 'report_interval': 1},
    'scheduler': {'schedule_period_seconds': 1, 'schedule_jitter': 0.2},
    'worker': {'workers': 1, 'certificate_plugin': 'recording'},
    'simple_certificate': {'delay_before_update_seconds': 1},
}


def _order_with_retry(database, retry_at):
    with database.session() as session, session.begin():
        order_id = counting.waiting_order(
            session, datetime.datetime.utcnow(), retry_at=retry_at)
        [task] = retry_tasks.list_tasks(session, order_id=order_id)
        return order_id, task.id


def _manage(cluster, *args):
    return processes.manage(cluster.config, *args, env=cluster.env)


def test_retry_show_explain_requeue(deployment, database):
    cluster = deployment(FAST)
    later = datetime.datetime.utcnow() + datetime.timedelta(days=2)
    order_id, task_id = _order_with_retry(database, later)

    shown = cluster.manage_json('retry', 'show', str(task_id))
    assert shown['order_id'] == order_id and shown['parked'] is False
    explained = cluster.manage_json('retry', 'explain', str(task_id))
    assert explained['why'].startswith('not due until')

    with database.session() as session, session.begin():
        retry_tasks.park(session, retry_tasks.get(session, task_id),
                         'arguments do not fit')
    explained = cluster.manage_json('retry', 'explain', str(task_id))
    assert 'set aside' in explained['why']
    assert 'arguments do not fit' in explained['why']
    [parked] = cluster.manage_json('retry', 'list', '--parked')
    assert parked['park_reason'] == 'arguments do not fit'

    _manage(cluster, 'retry', 'requeue', str(task_id))
    shown = cluster.manage_json('retry', 'show', str(task_id))
    assert shown['parked'] is False and shown['park_reason'] is None
    explained = cluster.manage_json('retry', 'explain', str(task_id))
    assert explained['why'] == 'due, but no barbican-retry daemon is alive'

    missing = processes.manage(cluster.config, 'retry', 'show', '999999',
                               check=False)
    assert missing.returncode != 0 and 'no retry task 999999' in \
        missing.stderr


def test_lock_release_needs_force_and_warns(deployment, database):
    cluster = deployment(FAST)
    with database.session() as session, session.begin():
        locks.insert(session, models.ORDER_RETRY_TASK_LOCK, 'h', 't',
                     datetime.datetime.utcnow())
    assert cluster.manage_json('lock', 'show')['held'] is True
    refused = processes.manage(cluster.config, 'lock', 'release',
                               check=False)
    assert refused.returncode != 0
    released = _manage(cluster, 'lock', 'release', '--force')
    assert 'WARNING' in released.stderr and 'lock released' in \
        released.stdout
    assert cluster.manage_json('lock', 'show')['held'] is False


def test_lock_show_explain_and_status_judge_the_lock_as_the_daemon_does(
        deployment, database):
    cluster = deployment(FAST)
    now = datetime.datetime.utcnow()
    _, task_id = _order_with_retry(database, now)
    with database.session() as session, session.begin():
        # A live daemon, and a lock younger than retry_lock_timeout_seconds
        # whose holder stopped heartbeating (service_down_time is 3 s).
        services.heartbeat(session, '1@live', models.SCHEDULER, 'live', 1,
                           now)
        services.heartbeat(session, '2@gone', models.SCHEDULER, 'gone', 2,
                           now - datetime.timedelta(seconds=10))
        locks.insert(session, models.ORDER_RETRY_TASK_LOCK, '2@gone', 't',
                     now - datetime.timedelta(seconds=10))

    shown = cluster.manage_json('lock', 'show')
    assert (shown['held'], shown['stale'], shown['stale_reason']) == (
        True, True, 'its holder stopped heartbeating')
    # The live daemon beats while the commands run, however long they
    # take to start on a busy machine (longer than service_down_time).
    with probes.Heartbeats(database, models.SCHEDULER, ['1@live']):
        explained = cluster.manage_json('retry', 'explain', str(task_id))
        checked = subprocess.run(
            [processes.BIN_DIR + '/barbican-retry-status', '--config-file',
             cluster.config, 'upgrade', 'check'],
            capture_output=True, text=True, timeout=60)
    assert explained['why'] == (
        'due; the lock of 2@gone is stale (its holder stopped heartbeating) '
        'and will be cleared by the next pass')
    # The result table wraps its lines.
    text = ' '.join(checked.stdout.replace('|', ' ').split())
    assert 'held by 2@gone since' in text
    assert 'stale (its holder stopped heartbeating)' in text

    with probes.Heartbeats(database, models.SCHEDULER, ['2@gone']):
        shown = cluster.manage_json('lock', 'show')
    assert (shown['stale'], shown['stale_reason']) == (False, None)


def test_cancel_stops_a_running_step_and_removes_retries(
        deployment, database, tmp_path):
    cluster = deployment(FAST)
    workers = cluster.start('barbican-worker', 'worker')
    workers.wait_for_log('serving topic')
    # The step runs until the cancel is done, however long the command
    # takes to start.
    release = tmp_path / 'cancelled'
    [created] = cluster.manage_json('order', 'create', '--type',
                                    'certificate', '--meta', json.dumps(
                                        {'hold_seconds': 120,
                                         'release_file': str(release)}))

    def owner():
        with database.session() as session:
            return steps.for_order(session, created['id'])[
                'process_type_order'].owner
    processes.wait_for(owner, 20, 'a worker to take the first step')

    _manage(cluster, 'order', 'cancel', created['id'], '--reason', 'typo')
    release.touch()
    workers.wait_for_log('its result was discarded', timeout=60)
    shown = cluster.manage_json('order', 'show', created['id'])
    assert shown['status'] == models.CANCELLED and \
        shown['error_reason'] == 'typo'
    # The running step and the one after it are cancelled, not run.
    assert [(step['name'], step['status'], step['owner'])
            for step in shown['steps']] == [
        ('process_type_order', models.STEP_CANCELLED, None),
        ('check_certificate_status', models.STEP_CANCELLED, None)]
    assert cluster.manage_json('retry', 'list') == []
    # Cancelling again changes nothing (worker.api.cancel is idempotent).
    again = processes.manage(cluster.config, 'order', 'cancel',
                             created['id'], '--reason', 'other')
    assert again.stdout == 'order %s cancelled\n' % created['id']
    assert cluster.manage_json('order', 'show', created['id'])[
        'error_reason'] == 'typo'
    assert workers.stop() == 0


def _metric(text, name):
    """Sum of the samples of ``name`` (a full sample name, labels and all,
    or its prefix before the labels)."""
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name) and not line.startswith('#'):
            total += float(line.rsplit(' ', 1)[1])
    return total


def _scraped_once(port, name, count):
    """The metrics text of ``port`` once ``name`` counts ``count`` or
    more."""
    def counted():
        text = processes.scrape(port)
        return text if _metric(text, name) >= count else None
    return processes.wait_for(counted, 60, '%s at %d' % (name, count))


def test_status_check_and_metrics_of_a_running_deployment(deployment,
                                                          database):
    scheduler_port, worker_port = processes.free_port(), processes.free_port()
    options = dict(FAST, metrics={'enabled': 'true',
                                  'scheduler_port': scheduler_port,
                                  'worker_port': worker_port})
    cluster = deployment(options)
    status = [processes.BIN_DIR + '/barbican-retry-status',
              '--config-file', cluster.config, 'upgrade', 'check']
    down = subprocess.run(status, capture_output=True, text=True,
                          timeout=60)
    assert down.returncode == 2 and 'no live barbican-retry' in down.stdout

    workers = cluster.start('barbican-worker', 'worker')
    retry = cluster.start('barbican-retry', 'retry')
    workers.wait_for_log('serving topic')
    retry.wait_for_log('Retry scheduler started')
    cluster.manage_json('order', 'create', '--type', 'certificate',
                        '--count', '20')
    processes.wait_for(lambda: processes.all_active(database, 20), 60,
                       '20 orders ACTIVE')
    retry.wait_for_log('Pass dispatched')
    # A pass records its metrics after its casts, and a worker its steps'
    # after their results, which the orders' end can outrun: waited for,
    # then compared exactly.
    scheduler_text = _scraped_once(
        scheduler_port, 'barbican_retry_rows_dispatched_total', 20)
    worker_text = _scraped_once(
        worker_port, 'barbican_retry_worker_steps_total{result="done"}', 20)

    up = subprocess.run(status, capture_output=True, text=True, timeout=60)
    assert up.returncode == 0, up.stdout

    shown = cluster.manage_json('status')
    assert (shown['retry_daemons_alive'], shown['workers_alive']) == (1, 1)
    [daemon] = [p for p in shown['processes'] if p['kind'] == 'scheduler']
    assert daemon['last_pass_at'] and daemon['next_pass_at']
    assert shown['orders']['ACTIVE'] == 20
    assert shown['oldest_pending'] is None
    assert shown['retry_rows'] == {'due_now': 0, 'later': 0, 'parked': 0}
    screen = _manage(cluster, 'status').stdout
    assert 'Retry daemons: 1 alive' in screen
    assert 'Orders: PENDING 0, ACTIVE 20,' in screen

    assert _metric(scheduler_text, 'barbican_retry_rows_dispatched_total') \
        == 20
    assert _metric(scheduler_text,
                   'barbican_retry_lateness_seconds_count') == 20
    assert _metric(scheduler_text,
                   'barbican_retry_passes_total{outcome="ran"}') >= 1
    # Passes with nothing to do (before the orders, after them) only read.
    assert _metric(scheduler_text,
                   'barbican_retry_passes_total{outcome="idle"}') >= 1
    assert 'barbican_retry_due_backlog 0.0' in scheduler_text
    # Each order: its request step done (status check scheduled), then
    # its status check, the last step.
    assert _metric(worker_text,
                   'barbican_retry_worker_steps_total{result="active"}') \
        == 20
    assert _metric(worker_text,
                   'barbican_retry_worker_steps_total{result="done"}') \
        == 20
    assert workers.stop() == 0 and retry.stop() == 0
    # The transport URL's password is never logged.
    assert 'guest:guest' not in workers.log() + retry.log()


def test_service_list_shows_dead_processes(deployment, database):
    cluster = deployment(FAST)
    workers = cluster.start('barbican-worker', 'worker')
    workers.wait_for_log('serving topic')
    [child] = workers.children()
    workers.kill()
    time.sleep(3.5)      # service_down_time
    [listed] = cluster.manage_json('service', 'list')
    assert listed['name'].startswith('%d@' % child)
    assert listed['alive'] is False
    assert json.loads(json.dumps(listed))['kind'] == 'worker'
