"""Every run of every step leaves a row in its order's history, shown by
``order history``: real barbican-worker and barbican-retry processes,
RabbitMQ and each database, running the recorded fan-out type
(``tests/plugin.py: RecordingFanout``).
"""

import datetime

from tests.functional import workflows
from worker.db import models

STEPS = workflows.STEPS
FIELDS = {'step', 'attempt', 'worker', 'started_at', 'finished_at',
          'result', 'error', 'requested_by'}


def _history(cluster, order_id):
    """``order history ORDER_ID -f json``, its fields checked."""
    runs = cluster.manage_json('order', 'history', order_id)
    for run in runs:
        assert set(run) == FIELDS, run
        assert _time(run['started_at']) <= _time(run['finished_at'])
    return runs


def _time(text):
    return datetime.datetime.fromisoformat(text)


def _of(runs, step):
    return [run for run in runs if run['step'] == step]


def _services(database):
    """The names of the worker processes heartbeating now."""
    return {row.name for row in workflows.services(database)
            if row.kind == 'worker'}


def test_each_run_of_a_step_that_fails_twice_then_succeeds(
        deployment, database):
    cluster = deployment(workflows.options())
    workflows.start(cluster)
    # Every step finds the remote side unavailable twice, then does it.
    [order_id] = workflows.create(cluster, meta={'unavailable_attempts': 2})
    workflows.wait_status(database, [order_id], models.ACTIVE, 60)

    runs = _history(cluster, order_id)

    [worker] = _services(database)
    assert {run['worker'] for run in runs} == {worker}
    for step in STEPS:
        down = 'remote service unavailable: %s: remote service ' \
            'unavailable (demo)' % step
        assert [(run['attempt'], run['result'], run['error'])
                for run in _of(runs, step)] == [
            (1, 'retry', down), (2, 'retry', down), (3, 'done', None)], step
    # Newest last: in the order the runs ended.
    assert [run['finished_at'] for run in runs] == sorted(
        run['finished_at'] for run in runs)
    assert _of(runs, 'poll')[0]['started_at'] >= max(
        run['finished_at'] for run in _of(runs, 'issue'))
    # By a unique prefix of the order's id too.
    assert len(cluster.manage_json('order', 'history', order_id[:13])) == \
        len(runs) == 3 * len(STEPS)


def test_a_worker_killed_in_a_step_leaves_a_run_taken_back(
        deployment, database):
    cluster = deployment(workflows.options())
    workers, retry = workflows.start(cluster)
    # issue's first run is held until its worker dies.
    [order_id] = workflows.create(cluster, meta={'hold_seconds': 60})
    owner = workflows.wait_running(database, order_id, 'issue')
    workers.kill()                      # SIGKILL, in the middle of issue
    replacement = cluster.start('barbican-worker', 'worker-2')
    replacement.wait_for_log('serving topic')

    workflows.wait_status(database, [order_id], models.ACTIVE, 45)

    runs = _history(cluster, order_id)
    killed, done = _of(runs, 'issue')
    assert (killed['attempt'], killed['worker'], killed['result'],
            killed['error']) == (1, owner, 'taken back',
                                 'its owner %s stopped heartbeating while '
                                 'running it (crash 1 of this step)'
                                 % owner)
    [other] = _services(database)
    assert other != owner
    assert (done['attempt'], done['worker'], done['result'],
            done['error']) == (2, other, 'done', None)
    assert done['started_at'] >= killed['finished_at']
    for step in STEPS:
        if step != 'issue':
            assert [run['result'] for run in _of(runs, step)] == ['done']
