"""An order type that changes with orders in flight, on every database,
with real worker and retry processes over RabbitMQ: the test type
``changing`` (``tests/plugin.py: Changing``) renames a step, removes one
and adds one in its new release, which keeps its graph before. The
workers are restarted onto the new release while 100 orders of the old
one are in flight; orders a newer release created wait, untaken, for a
worker that declares their graph (a rolling upgrade).
"""

import json
import subprocess
import time

from tests.functional import processes
from tests.functional import workflows
from tests import plugin as test_plugin
from worker.db import models

TYPE = 'changing'
CHANGED = {test_plugin.CHANGED_VARIABLE: '1'}
COUNT = 100
BEFORE = {'prepare', 'dropped', 'fetch'}
AFTER = {'prepare', 'collect', 'added'}


def _create(cluster, count, env, hold_seconds):
    """``count`` orders of ``changing`` as the release of ``env`` declares
    it; their ids."""
    created = processes.manage(
        cluster.config, 'order', 'create', '--type', TYPE, '--count',
        str(count), '--meta', json.dumps({'hold_seconds': hold_seconds}),
        '-f', 'json', env=env)
    return [order['id'] for order in json.loads(created.stdout)]


def _upgrade_check(cluster, env):
    """``barbican-retry-status upgrade check``'s output, one line."""
    checked = subprocess.run(
        [processes.BIN_DIR + '/barbican-retry-status', '--config-file',
         cluster.config, 'upgrade', 'check'],
        capture_output=True, text=True, timeout=120, env=env)
    # The result table wraps its lines.
    return ' '.join(checked.stdout.replace('|', ' ').split())


def _statuses(database, order_ids):
    return [workflows.status(database, order_id) for order_id in order_ids]


def _start(cluster, name, env=None):
    workers = cluster.start('barbican-worker', 'worker' + name, env=env)
    retry = cluster.start('barbican-retry', 'retry' + name, env=env)
    workers.wait_for_log('serving topic')
    retry.wait_for_log('Retry scheduler started')
    return workers, retry


def test_a_type_changed_with_orders_in_flight(deployment, database):
    cluster = deployment(workflows.options())
    old_env, new_env = cluster.env, dict(cluster.env, **CHANGED)
    workers, retry = _start(cluster, '-old')

    # A newer release's API creates orders before its workers run: the
    # old workers take none of their steps, and count no attempt.
    newer = _create(cluster, 10, new_env, 0.2)
    others = workflows.create(cluster, 10, order_type='single_step')
    # No other order waits behind them.
    workflows.wait_status(database, others, models.ACTIVE, 30)
    workers.wait_for_log('Leaving the orders of type changing created '
                         'with workflow version')
    version = workflows.order(database, newer[0]).workflow_version
    assert cluster.manage_json('order', 'show', newer[0])[
        'workflow_version'] == version
    explained = cluster.manage_json('order', 'explain', newer[0])
    assert explained['workflow_version'] == version
    assert 'no worker of this release runs it' in explained['why'], \
        explained
    assert 'does not declare workflow version %s' % version in \
        explained['why']
    checked = _upgrade_check(cluster, old_env)
    assert 'unfinished orders of graphs their installed type no longer ' \
        'declares: changing version %s (10)' % version in checked, checked
    for order_id in newer:
        rows = workflows.step_rows(database, order_id)
        assert set(rows) == AFTER
        assert (rows['prepare'].attempt, rows['prepare'].failures) == (0, 0)
    assert set(_statuses(database, newer)) == {models.PENDING}

    old = _create(cluster, COUNT, old_env, 1.0)
    processes.wait_for(
        lambda: models.ACTIVE in _statuses(database, old[:10]), 60,
        'the first orders of the old graph to end')
    # Restarted onto the new release in the middle.
    assert workers.stop() == 0
    retry.stop()
    in_flight = [order_id for order_id, status in
                 zip(old, _statuses(database, old))
                 if status not in models.TERMINAL_STATUSES]
    assert in_flight, 'every order ended before the restart'
    started = time.monotonic()
    workers, retry = _start(cluster, '-new', CHANGED)

    workflows.wait_status(database, old + newer, models.ACTIVE, 60)
    for order_id in old:
        order = workflows.order(database, order_id)
        assert set(workflows.step_rows(database, order_id)) == BEFORE
        assert {'ran_dropped', 'ran_fetch'} <= set(order.meta)
        assert 'ran_collect' not in order.meta
    for order_id in newer:
        order = workflows.order(database, order_id)
        assert order.workflow_version == version
        assert {'ran_collect', 'ran_added'} <= set(order.meta)
    assert time.monotonic() - started < 180
    log = workers.log()
    assert 'Leaving the orders' not in log and 'KeyError' not in log, log
    assert cluster.manage_json('retry', 'list') == []
    checked = _upgrade_check(cluster, new_env)
    assert 'no longer declares' not in checked, checked
    workers.stop()
    retry.stop()
