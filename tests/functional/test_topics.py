"""Topics per order type: a slow type cannot starve the others.

Two barbican-worker pools over a real RabbitMQ and each database: one on
``[worker] topic``, one started with ``--topic`` for the test type
``sleeping`` (``tests/plugin.py: SleepingOrder``), whose
``[order_type:sleeping] topic`` it is. Each pool runs two steps at once
(``executor_thread_pool_size``). Which process ran a step is read from
its order's history (``order_step_runs.worker``, ``pid@host``).
"""

import subprocess

from tests.functional import processes
from tests.functional import workflows
from worker.db import history
from worker.db import models

SLOW = 'sleeping'
FAST = 'fanout'


def _deployment(deployment):
    """``(cluster, slow topic)``: ``sleeping`` on a topic of its own."""
    slow_topic = processes.new_topic()
    return deployment(workflows.options({
        'DEFAULT': {'executor_thread_pool_size': 2},
        'order_type:%s' % SLOW: {'topic': slow_topic},
        'fanout': {'poll_interval_seconds': 0.2}})), slow_topic


def _start_slow_pool(cluster, slow_topic):
    """The pool of ``slow_topic``, serving; its worker's pid."""
    slow = cluster.start('barbican-worker', 'worker-slow',
                         args=['--topic', slow_topic])
    slow.wait_for_log('serving topic %s (order types: %s)'
                      % (slow_topic, SLOW))
    [pid] = slow.children()
    return pid


def _start(deployment, slow_pool=True):
    """The default pool and the retry daemon, and the slow pool, serving;
    ``(cluster, slow topic, fast pool's pid, slow pool's pid or None,
    retry daemon)``."""
    cluster, slow_topic = _deployment(deployment)
    fast = cluster.start('barbican-worker', 'worker')
    retry = cluster.start('barbican-retry', 'retry')
    fast.wait_for_log('serving topic %s (order types: ' % cluster.topic)
    # Every installed type but the slow one, whose steps go to its topic.
    [served] = [line.split('order types: ')[1] for line in
                fast.log().splitlines() if 'serving topic' in line]
    assert {'certificate', 'fanout'} <= set(served.rstrip(')').split(', '))
    assert SLOW not in served.rstrip(')').split(', ')
    retry.wait_for_log('Retry scheduler started')
    [fast_pid] = fast.children()
    slow_pid = _start_slow_pool(cluster, slow_topic) if slow_pool else None
    return cluster, slow_topic, fast_pid, slow_pid, retry


def _workers(database, order_ids):
    """``{(order, step, result): pid}`` of every run of these orders."""
    with database.session() as session:
        return {(run.order_id, run.step, run.result):
                int(run.worker.split('@')[0])
                for order_id in order_ids
                for run in history.for_order(session, order_id)}


def test_a_slow_types_steps_run_on_its_own_pool_and_do_not_starve_others(
        deployment, database):
    cluster, slow_topic, fast_pid, slow_pid, retry = _start(deployment)
    assert {(row['kind'], row['pid']): row['topic']
            for row in cluster.manage_json('service', 'list')} == {
        ('worker', fast_pid): cluster.topic, ('worker', slow_pid): slow_topic,
        ('scheduler', retry.process.pid): None}

    # A step of the slow type asks to be polled: the worker writes a retry
    # row, and the retry daemon casts it to the type's topic.
    [polled] = workflows.create(cluster, meta={'poll_once': True},
                                order_type=SLOW)
    workflows.wait_status(database, [polled], models.ACTIVE, 30)
    assert _workers(database, [polled]) == {
        (polled, 'sleep', models.RUN_RETRY): slow_pid,
        (polled, 'sleep', models.RUN_DONE): slow_pid}
    retry.wait_for_log('Cast step sleep of order %s (retry row' % polled)

    # Four slow orders: two hold both step threads of the slow pool for a
    # minute, two wait behind them.
    slow = workflows.create(cluster, count=4, meta={'seconds': 60},
                            order_type=SLOW)
    owners = processes.wait_for(
        lambda: _owners(database, slow) if len(
            _owners(database, slow)) == 2 else None,
        30, 'both step threads of the slow pool taken')
    assert set(owners.values()) == {slow_pid}

    # Orders of another type complete meanwhile, on the other pool: their
    # first steps cast by the API, the steps their results made ready by
    # the workers, and the polls (retry rows) by the retry daemon.
    fast = workflows.create(cluster, count=5, order_type=FAST)
    workflows.wait_status(database, fast, models.ACTIVE, 45)
    assert {workflows.status(database, order_id)
            for order_id in slow} == {models.PENDING}
    assert _owners(database, slow) == owners
    ran_by = _workers(database, fast)
    assert len(ran_by) == 5 * 7
    assert set(ran_by.values()) == {fast_pid}


def _owners(database, order_ids):
    """``{order: pid}`` of the orders whose ``sleep`` step is claimed."""
    found = {}
    for order_id in order_ids:
        owner = workflows.step_rows(database, order_id)['sleep'].owner
        if owner is not None:
            found[order_id] = int(owner.split('@')[0])
    return found


def test_a_step_cast_before_its_topic_has_a_worker_runs_once_it_has(
        deployment, database):
    cluster, slow_topic, _, _, _ = _start(deployment, slow_pool=False)
    [order_id] = workflows.create(cluster, order_type=SLOW)
    why = cluster.manage_json('order', 'explain', order_id)['why']
    assert 'step sleep cast to topic %s (served by barbican-worker --topic ' \
        '%s)' % (slow_topic, slow_topic) in why

    checked = _upgrade_check(cluster)
    assert checked.returncode == 2
    assert 'no live barbican-worker serves topic %s (order types: %s)' % (
        slow_topic, SLOW) in ' '.join(checked.stdout.replace('|', ' ').split())

    slow_pid = _start_slow_pool(cluster, slow_topic)
    assert _upgrade_check(cluster).returncode == 0
    # At the latest after the dispatch deadline (5 s) and a pass: the
    # retry daemon takes the step back and casts it again.
    workflows.wait_status(database, [order_id], models.ACTIVE, 30)
    assert _workers(database, [order_id]) == {
        (order_id, 'sleep', models.RUN_DONE): slow_pid}


def _upgrade_check(cluster):
    """``barbican-retry-status upgrade check``, the test types installed."""
    return subprocess.run(
        [processes.BIN_DIR + '/barbican-retry-status', '--config-file',
         cluster.config, 'upgrade', 'check'],
        capture_output=True, text=True, timeout=60, env=cluster.env)
