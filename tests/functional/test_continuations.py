"""Local continuations on every database: the step a result makes ready
runs on the worker that wrote the result, with no message, and a worker
killed while running such a step has it recovered and run once elsewhere
(``worker.steps.continuation``).
"""

import re

from oslo_utils import timeutils

from tests import config
from tests import fakes
from tests.functional import processes
from tests.functional import workflows
from worker.db import history
from worker.db import models
from worker.db import orders
from worker import manager
from worker import order_types
from worker.plugins import simple_certificate
from worker import rpcapi

REQUEST = 'process_type_order'
CHECK = 'check_certificate_status'
OWNER = 'worker-1@test'


def test_the_second_step_runs_on_the_same_worker_with_no_message(
        database, use_plugin):
    # The status check is ready at once (no delay before the update).
    use_plugin(simple_certificate.SimpleCertificatePlugin(0))
    conf = config.make_conf()
    client, continued = fakes.RecordingRPCClient(), []
    worker = manager.WorkerManager(
        conf, database, OWNER, worker_api=rpcapi.WorkerAPI(client),
        topic=conf.worker.topic, observe_continued=continued.append)
    with database.session() as session, session.begin():
        order_id = orders.create(session, order_types.get('certificate'),
                                 {}, timeutils.utcnow()).id

    worker.process_type_order({}, order_id, 0)

    assert client.casts == [] and continued == [1]
    with database.session() as session:
        assert orders.get(session, order_id).status == models.ACTIVE
        runs = history.for_order(session, order_id)
    # Each claimed once, under its own token, by this worker.
    assert [(run.step, run.generation, run.attempt, run.worker,
             run.result)
            for run in runs] == [
        (REQUEST, 1, 1, OWNER, models.RUN_DONE),
        (CHECK, 1, 1, OWNER, models.RUN_DONE)]


def test_a_worker_killed_in_a_continued_step_has_it_run_once_elsewhere(
        deployment, database):
    port = processes.free_port()
    cluster = deployment(workflows.options(
        {'metrics': {'enabled': 'true', 'worker_port': port}}))
    workers, _ = workflows.start(cluster)
    # issue is made ready by the last check's result, continued on the
    # same worker, and held there until the worker dies.
    [order_id] = workflows.create(cluster, meta={'hold_seconds': 60})
    owner = workflows.wait_running(database, order_id, 'issue')
    assert _continued(port) >= 1

    workers.kill()
    replacement = cluster.start('barbican-worker', 'worker-2')
    workflows.wait_status(database, [order_id], models.ACTIVE, 40)

    issue = [(run['attempt'], run['worker'], run['result'])
             for run in cluster.manage_json('order', 'history', order_id)
             if run['step'] == 'issue']
    assert issue[0] == (1, owner, 'taken back')
    assert len(issue) == 2 and issue[1][1] != owner and \
        issue[1][2] == 'done', issue
    # Run to its end once, by the worker that took it over.
    [run] = workflows.runs(cluster)[order_id, 'issue']
    assert run['result'] == 'Completed'
    assert replacement.stop() == 0


def _continued(port):
    found = re.search(r'^barbican_retry_worker_continued_steps_total '
                      r'([0-9.e+]+)$', processes.scrape(port), re.M)
    return float(found.group(1)) if found else 0.0
