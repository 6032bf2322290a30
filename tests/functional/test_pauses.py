"""Pausing and resuming end to end: ``barbican-retry-manage … pause`` and
``unpause`` over real barbican-worker and barbican-retry processes,
RabbitMQ and each database.

A paused order type's, resource key's or order's steps are never claimed
(no run in the history, no owner, a retry row waiting for the pause) and
their orders stay PENDING; the unpause casts them and they finish. A
paused schedule's ticks make no order.
"""

from tests.functional import processes
from tests.functional import remote
from tests.functional import test_schedules
from tests.functional import workflows
from worker.db import history
from worker.db import models
from worker.db import pauses
from worker.db import retry_tasks

OPTIONS = workflows.options({'worker': {'pause_refresh_seconds': 0.5},
                             'scheduler': {'schedule_check_seconds': 1}})


def _held(database):
    """The retry rows of the steps a pause holds."""
    with database.session() as session:
        return [row for row in retry_tasks.list_tasks(session)
                if pauses.pause_id_of(row.waiting_for) is not None]


def _runs(database, order_ids):
    with database.session() as session:
        return [run for order_id in order_ids
                for run in history.for_order(session, order_id)]


def _manage(cluster, *args):
    return processes.manage(cluster.config, *args, env=cluster.env).stdout


def test_a_paused_type_takes_no_claim_until_unpaused(deployment, database):
    cluster = deployment(OPTIONS)
    _manage(cluster, 'order', 'type', 'pause', workflows.TYPE, '--reason',
            'CA maintenance')
    workflows.start(cluster)
    created = workflows.create(cluster, 5)
    # Each order's three first steps wait for the pause.
    processes.wait_for(lambda: len(_held(database)) == 15, 30,
                       '15 steps held by the pause')

    assert [workflows.status(database, order_id)
            for order_id in created] == [models.PENDING] * 5
    assert _runs(database, created) == []
    assert all(step.owner is None for order_id in created
               for step in workflows.step_rows(database, order_id).values())
    [shown] = cluster.manage_json('pause', 'list')
    assert (shown['target'], shown['name'], shown['reason']) == (
        'order_type', workflows.TYPE, 'CA maintenance')
    order = cluster.manage_json('order', 'show', created[0])
    assert [pause['name'] for pause in order['paused_by']] == [
        workflows.TYPE]
    assert 'held by the pause of order_type' in _manage(
        cluster, 'order', 'explain', created[0])

    _manage(cluster, 'order', 'type', 'unpause', workflows.TYPE)

    workflows.wait_status(database, created, models.ACTIVE, 60)
    assert _held(database) == []
    assert 'paused_by' not in cluster.manage_json('order', 'show',
                                                  created[0])


def test_a_paused_key_and_a_paused_order_hold_only_theirs(deployment,
                                                          database):
    cluster = deployment(OPTIONS)
    with remote.RemoteService() as service:
        for key in ('ca:one', 'ca:three'):
            _manage(cluster, 'resource', 'pause', key)
        workflows.start(cluster)

        def create(key, count):
            return workflows.create(cluster, count, meta={
                'url': service.url, 'key': key, 'hold_seconds': 0},
                order_type='remote_call')

        held, [solo], free = (create('ca:one', 3), create('ca:three', 1),
                              create('ca:two', 2))
        # Held by its key until its own pause is set: then by that.
        _manage(cluster, 'order', 'pause', solo)
        _manage(cluster, 'resource', 'unpause', 'ca:three')
        workflows.wait_status(database, free, models.ACTIVE, 60)
        processes.wait_for(
            lambda: len(_held(database)) == 4 and 'paused_by' in
            cluster.manage_json('order', 'show', solo), 60,
            '4 steps held by pauses, one by its order\'s')
        assert [pause['target'] for pause in cluster.manage_json(
            'order', 'show', solo)['paused_by']] == ['order']
        assert [workflows.status(database, order_id)
                for order_id in held + [solo]] == [models.PENDING] * 4
        assert 'ca:one' not in service.calls
        assert 'ca:three' not in service.calls
        assert _runs(database, held + [solo]) == []

        _manage(cluster, 'resource', 'unpause', 'ca:one')
        _manage(cluster, 'order', 'unpause', solo)

        workflows.wait_status(database, held + [solo], models.ACTIVE, 60)
        assert (len(service.calls['ca:one']),
                len(service.calls['ca:three'])) == (3, 1)


def test_a_paused_schedule_ticks_no_order(deployment, database):
    cluster = deployment(OPTIONS)
    _, retry = workflows.start(cluster)
    schedule = cluster.manage_json(
        'schedule', 'create', '--type', 'certificate', '--every', '1s',
        '--project', 'renewals')
    test_schedules._wait_orders(database, schedule['id'], 1, 30)
    _manage(cluster, 'schedule', 'pause', schedule['id'])
    made = len(test_schedules._orders(database, schedule['id']))

    # Three ticks seen paused: at most one order more, of a tick that was
    # being made as the pause came.
    retry.wait_for_log('Schedule %s is paused' % schedule['id'], count=3,
                       timeout=30)
    paused = len(test_schedules._orders(database, schedule['id']))
    assert paused <= made + 1

    _manage(cluster, 'schedule', 'unpause', schedule['id'])
    test_schedules._wait_orders(database, schedule['id'], paused + 2, 30)


def test_a_bulk_pause_holds_each_matching_order_until_its_unpause(
        deployment, database):
    cluster = deployment(OPTIONS)
    # The type's pause first, so that no step of these orders runs before
    # their own pauses are set.
    _manage(cluster, 'order', 'type', 'pause', workflows.TYPE)
    workflows.start(cluster)
    # Told apart by their metadata (the type's schema is closed).
    held = workflows.create(cluster, 3, meta={'unavailable_attempts': 0})
    free = workflows.create(cluster, 2)
    processes.wait_for(lambda: len(_held(database)) == 15, 30,
                       '15 steps held by the type pause')

    assert _manage(cluster, 'order', 'bulk', 'pause', '--meta',
                   'unavailable_attempts=0') == (
        '3 order(s) matched; 3 changed (pause)\n')
    _manage(cluster, 'order', 'type', 'unpause', workflows.TYPE)

    workflows.wait_status(database, free, models.ACTIVE, 60)
    # Woken by the type's unpause, the held orders' steps wait again, for
    # their orders' own pauses: none of them ran.
    processes.wait_for(lambda: len(_held(database)) == 9, 30,
                       '9 steps held by the order pauses')
    assert [workflows.status(database, order_id)
            for order_id in held] == [models.PENDING] * 3
    assert _runs(database, held) == []
    paused = {pause['name']: pause['reason']
              for pause in cluster.manage_json('pause', 'list')}
    assert paused == {order_id: 'paused in bulk by an operator'
                      for order_id in held}

    for order_id in held:
        _manage(cluster, 'order', 'unpause', order_id)
    workflows.wait_status(database, held, models.ACTIVE, 60)
    assert _held(database) == []
