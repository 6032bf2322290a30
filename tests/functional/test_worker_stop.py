"""A graceful stop on every database: a worker process that receives
SIGTERM with steps running, continued and queued counts no crash, and
every order completes (``worker.service.WorkerService.stop``).
"""

import json

from tests.functional import processes
from tests.functional import workflows
from tests import plugin as test_plugin
from worker.db import models

GROWN = {test_plugin.GROWN_VARIABLE: '1'}


def _growing(cluster, meta):
    """One order of ``growing`` (with its step ``third``)."""
    created = processes.manage(
        cluster.config, 'order', 'create', '--type', 'growing', '--meta',
        json.dumps(meta), '-f', 'json', env=dict(cluster.env, **GROWN))
    [order] = json.loads(created.stdout)
    return order['id']


def _claimed(database, order_ids, step):
    return any(workflows.step_rows(database, order_id)[step].owner
               for order_id in order_ids)


def test_sigterm_with_steps_continued_and_queued_counts_no_crash(
        deployment, database):
    # Two step threads: the steps of most messages wait for one.
    cluster = deployment(workflows.options(
        {'DEFAULT': {'executor_thread_pool_size': 2}}))
    worker = cluster.start('barbican-worker', 'worker', env=GROWN)
    cluster.start('barbican-retry', 'retry', env=GROWN)
    worker.wait_for_log('serving topic')
    # ``third`` is continued on a step thread of its own, and holds it.
    held = _growing(cluster, {'hold_seconds': 15})
    owner = workflows.wait_running(database, held, 'third')
    queued = workflows.create(cluster, count=6, meta={'seconds': 2},
                              order_type='sleeping')
    processes.wait_for(lambda: _claimed(database, queued, 'sleep'), 30,
                       'a sleeping step to run')

    assert worker.stop() == 0
    # Stopped once its steps ended, not before.
    assert workflows.step_rows(database, held)['third'].status == \
        models.STEP_DONE
    cluster.start('barbican-worker', 'worker-2', env=GROWN)

    workflows.wait_status(database, [held] + queued, models.ACTIVE, 60)
    for order_id in [held] + queued:
        history = cluster.manage_json('order', 'history', order_id)
        # No run was taken back: none counted a crash.
        assert [run for run in history if run['result'] != 'done'] == [], \
            history
    [third] = [run for run in cluster.manage_json('order', 'history', held)
               if run['step'] == 'third']
    assert (third['attempt'], third['worker']) == (1, owner)
