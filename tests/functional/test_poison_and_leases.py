"""Poison steps are contained; leases grow; a run within its grace is kept.

Real barbican-worker and barbican-retry processes over the real broker and
databases; the test plugin (``tests/plugin.py``) records every call with
its token, kills its own worker for a poison order, and holds or extends
its lease when asked to.
"""

import copy

import pytest

from tests.functional import processes
from tests import plugin as test_plugin
from worker.db import models
from worker.db import orders

REQUEST = 'process_type_order'
CALL = 'issue_certificate_request'

FAST = {
    'DEFAULT': {'service_down_time': 3, 'report_interval': 1},
    'scheduler': {'schedule_period_seconds': 1, 'schedule_jitter': 0.2,
                  'dispatch_deadline_seconds': 5, 'cast_timeout_seconds': 2,
                  'max_pass_seconds': 5, 'retry_lock_timeout_seconds': 20},
    'worker': {'workers': 2, 'certificate_plugin': 'recording',
               'max_step_crashes': 2},
    'simple_certificate': {'delay_before_update_seconds': 1},
}


def _options(**groups):
    options = copy.deepcopy(FAST)
    for group, values in groups.items():
        options.setdefault(group, {}).update(values)
    return options


def _statuses(database):
    with database.session() as session:
        return {order.id: order for order in orders.list_orders(session)}


def _calls(cluster, order_id):
    return [call for call in test_plugin.read_log(cluster.plugin_log)
            if call['order'] == order_id and call['step'] == CALL]


def _create(cluster, meta='{}', count=1):
    return [order['id'] for order in cluster.manage_json(
        'order', 'create', '--type', 'certificate', '--count', str(count),
        '--meta', meta)]


def test_a_poison_step_fails_after_max_step_crashes_and_the_pool_serves_on(
        deployment, database):
    cluster = deployment(FAST)
    workers = cluster.start('barbican-worker', 'worker')
    retry = cluster.start('barbican-retry', 'retry')
    workers.wait_for_log('serving topic', count=2)
    retry.wait_for_log('Retry scheduler started')
    [poison] = _create(cluster, '{"kill_worker": true}')
    healthy = _create(cluster, count=5)

    order = processes.wait_for(
        lambda: _statuses(database)[poison].status == models.ERROR and
        _statuses(database)[poison], 90, 'the poison order to fail')
    assert order.error_reason is not None
    assert 'the worker died 2 times while running this step' in \
        order.error_reason
    # It killed its worker twice, each time under a new token, and never
    # ran again: the third claim failed it without calling the step.
    killed = _calls(cluster, poison)
    assert [call['result'] for call in killed] == ['killed', 'killed']
    assert len({call['pid'] for call in killed}) == 2
    shown = {step['name']: step for step in cluster.manage_json(
        'order', 'show', poison)['steps']}
    assert (shown[REQUEST]['status'], shown[REQUEST]['crashes']) == (
        models.STEP_FAILED, 2)
    taken_back = [line for line in retry.log().splitlines()
                  if 'of order %s taken back' % poison in line]
    assert len(taken_back) == 2
    assert '(crash 1 of this step)' in taken_back[0]
    assert '(crash 2 of this step)' in taken_back[1]

    # The launcher replaced the killed processes; the pool serves on.
    later = _create(cluster, count=5)
    processes.wait_for(lambda: all(
        _statuses(database)[order_id].status == models.ACTIVE
        for order_id in healthy + later), 60, 'every other order ACTIVE')
    assert workers.stop() == 0 and retry.stop() == 0


# The isolation is the worker's: one backend is enough (the claim's
# refusal is the resource waits' parking, tested on each).
@pytest.mark.parametrize('backend', ['postgresql'])
def test_a_poison_step_back_again_waits_and_dies_without_its_neighbours(
        deployment, database):
    # One worker process: without the isolation of a step that crashed,
    # the poison step coming back kills the long steps it finds running.
    # service_down_time 8 s: the poison step comes back 8 to 10 s after
    # each death, well after the worker started again (seconds, on a
    # loaded machine) has claimed the held steps.
    cluster = deployment(_options(DEFAULT={'service_down_time': 8},
                                  worker={'workers': 1,
                                          'max_step_crashes': 3}))
    workers = cluster.start('barbican-worker', 'worker')
    retry = cluster.start('barbican-retry', 'retry')
    workers.wait_for_log('serving topic')
    retry.wait_for_log('Retry scheduler started')
    [poison] = _create(cluster, '{"kill_worker": true}')
    processes.wait_for(lambda: _calls(cluster, poison), 30,
                       'the poison step to kill its worker')
    # Their first run holds 12 s in the worker started after the death:
    # the poison step comes back while they run.
    held = _create(cluster, '{"hold_seconds": 12}', count=2)

    ended = (models.ACTIVE, models.ERROR)
    processes.wait_for(lambda: all(
        _statuses(database)[order_id].status in ended
        for order_id in [poison] + held), 90, 'every order to end')

    statuses = _statuses(database)
    assert 'the worker died 3 times' in statuses[poison].error_reason
    for order_id in held:
        assert statuses[order_id].status == models.ACTIVE
        # Each ran once, to its end, under its first token: the poison
        # step waited for them before it killed the process again.
        assert [call['token'] for call in _calls(cluster, order_id)] == [1]
    # The poison step's second run waited for theirs to end.
    killed = _calls(cluster, poison)
    assert killed[1]['started'] >= max(
        call['ended'] for order_id in held
        for call in _calls(cluster, order_id))
    assert workers.log().count('runs alone in this one') >= 2
    assert not [line for line in retry.log().splitlines()
                if 'taken back' in line and
                any(order_id in line for order_id in held)]
    assert workers.stop() == 0 and retry.stop() == 0


def test_an_extended_lease_holds_and_a_late_run_keeps_its_grace(
        deployment, database):
    """Lease of 3 s, grace of 4 s:

    - ``extending`` holds 10 s and extends its lease to 3 s every second:
      never taken back, run once;
    - ``late`` holds 5 s without extending: its lease ended, but it
      writes its result within its grace: run once, not taken back;
    - ``hung`` holds 12 s: taken back after lease and grace, run again
      under a new token; the hung run's result is discarded.
    """
    cluster = deployment(_options(
        worker={'lease_grace_seconds': 4, 'workers': 3},
        **{'step:certificate.process_type_order': {'timeout_seconds': 3}}))
    workers = cluster.start('barbican-worker', 'worker')
    retry = cluster.start('barbican-retry', 'retry')
    workers.wait_for_log('serving topic', count=3)
    retry.wait_for_log('Retry scheduler started')
    [extending] = _create(cluster, '{"hold_seconds": 10, '
                                   '"extend_lease_seconds": 3}')
    [late] = _create(cluster, '{"hold_seconds": 5}')
    [hung] = _create(cluster, '{"hold_seconds": 12}')

    processes.wait_for(lambda: all(
        _statuses(database)[order_id].status == models.ACTIVE
        for order_id in (extending, late, hung)), 60, 'the orders ACTIVE')
    assert [call['token'] for call in _calls(cluster, extending)] == [1]
    assert [call['token'] for call in _calls(cluster, late)] == [1]
    # The hung run is recorded when it ends, after its second run.
    processes.wait_for(lambda: len(_calls(cluster, hung)) == 2, 20,
                       'the hung run to end')
    assert sorted(call['token'] for call in _calls(cluster, hung)) == [1, 3]
    log = retry.log()
    assert 'Step %s of order %s taken back' % (REQUEST, hung) in log
    for kept in (extending, late):
        assert 'of order %s taken back' % kept not in log
    assert workers.stop() == 0 and retry.stop() == 0
