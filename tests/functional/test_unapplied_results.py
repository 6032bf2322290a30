"""A result that cannot be applied, on every database: a real worker
process meets orders in flight of an order type that gained a step; their
results fail their own orders, and the other orders of the same batches
complete (``worker.steps.apply``).
"""

import json
import os

from tests.functional import processes
from tests.functional import workflows
from tests import plugin as test_plugin
from worker.db import models

TYPE = 'growing'
GROWN = {test_plugin.GROWN_VARIABLE: '1'}
COUNT = 8


def _create(cluster, gate, env):
    """``COUNT`` orders of ``growing`` as the release of ``env`` knows it,
    their first step held until ``gate`` exists."""
    created = processes.manage(
        cluster.config, 'order', 'create', '--type', TYPE, '--count',
        str(COUNT), '--meta', json.dumps({'gate': gate}), '-f', 'json',
        env=env)
    return [order['id'] for order in json.loads(created.stdout)]


def test_orders_in_flight_when_their_type_gains_a_step_fail_alone(
        deployment, database, tmp_path):
    cluster = deployment(workflows.options())
    gate = os.path.join(str(tmp_path), 'gate')
    # The new release runs; the orders of the old one are in flight.
    workers = cluster.start('barbican-worker', 'worker', env=GROWN)
    cluster.start('barbican-retry', 'retry', env=GROWN)
    workers.wait_for_log('serving topic')
    old = _create(cluster, gate, cluster.env)
    new = _create(cluster, gate, dict(cluster.env, **GROWN))
    for order_id in old + new:
        workflows.wait_running(database, order_id, 'first', timeout=60)

    # Every first step ends at once: their results share batches.
    open(gate, 'w').close()

    workflows.wait_status(database, new, models.ACTIVE, 60)
    workflows.wait_status(database, old, models.ERROR, 60)
    for order_id in old:
        order = workflows.order(database, order_id)
        assert "step first failed: its result could not be applied " \
            "(KeyError: 'third')" in order.error_reason, order.error_reason
        assert workflows.step_rows(database, order_id)['first'].status == \
            models.STEP_FAILED
    # Failed visibly, once each, by a worker that goes on.
    log = workers.log()
    assert log.count('; the step fails') == COUNT, log
    assert 'Traceback' in log and 'kept and written again' not in log
    assert workers.process.poll() is None
    assert workers.stop() == 0
