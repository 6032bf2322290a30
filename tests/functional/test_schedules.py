"""Periodic orders: ``barbican-retry-manage schedule …`` and the retry
daemons' ticks.

Real barbican-retry processes (two, one SIGKILLed midway, then none, then
one again), a real worker over RabbitMQ and each database: every tick of
a schedule makes exactly one order, and the ticks missed while no daemon
ran make one.
"""

import datetime
import time

import sqlalchemy as sa

from tests.functional import processes
from tests.functional import workflows
from worker.db import models

ORDERS = models.Order.__table__
EVERY = 2
OPTIONS = workflows.options({'scheduler': {'schedule_check_seconds': 1}})


def _orders(database, schedule_id):
    """``[(tick, order id, idempotency key, status)]`` of the schedule's
    orders, by tick."""
    with database.engine.connect() as connection:
        found = connection.execute(
            sa.select(ORDERS.c.idempotency_key, ORDERS.c.id,
                      ORDERS.c.status)
            .where(ORDERS.c.schedule_id == schedule_id)).all()
    prefix = 'schedule:%s:' % schedule_id
    ticks = []
    for key, order_id, status in found:
        assert key.startswith(prefix) and key.endswith('Z'), key
        tick = datetime.datetime.fromisoformat(key[len(prefix):-1])
        ticks.append((tick, order_id, key, status))
    return sorted(ticks)


def _wait_orders(database, schedule_id, count, timeout):
    return processes.wait_for(
        lambda: len(found := _orders(database, schedule_id)) >= count and
        found, timeout, '%d orders of schedule %s' % (count, schedule_id))


def _gaps(ticks):
    """Seconds between consecutive ticks."""
    return [(later[0] - earlier[0]).total_seconds()
            for earlier, later in zip(ticks, ticks[1:])]


def test_one_order_per_tick_with_daemons_killed_and_missed_ticks_once(
        deployment, database):
    cluster = deployment(OPTIONS)
    workers = cluster.start('barbican-worker', 'worker')
    workers.wait_for_log('serving topic')
    schedule = cluster.manage_json(
        'schedule', 'create', '--type', 'certificate', '--every',
        '%ds' % EVERY, '--project', 'renewals')
    first, second = (cluster.start('barbican-retry', 'retry-%d' % number)
                     for number in (1, 2))

    # Two daemons, then one: the first SIGKILLed after three ticks.
    _wait_orders(database, schedule['id'], 3, 30)
    first.kill()
    before_kill = len(_orders(database, schedule['id']))
    _wait_orders(database, schedule['id'], before_kill + 3, 20)
    # Every daemon down for four ticks and more.
    second.kill()
    lived = _orders(database, schedule['id'])
    time.sleep(4 * EVERY + 1)
    assert _orders(database, schedule['id']) == lived
    third = cluster.start('barbican-retry', 'retry-3')
    made = _wait_orders(database, schedule['id'], len(lived) + 2, 30)
    # Real orders, whose first steps were cast: the worker and the retry
    # daemon (which casts their retries) run them to ACTIVE.
    workflows.wait_status(database, [order_id for _, order_id, _, _ in made],
                          models.ACTIVE, 60)
    assert third.stop() == 0
    ticks = _orders(database, schedule['id'])

    # No tick twice: one order a key, one key a tick.
    assert len({key for _, _, key, _ in ticks}) == len(ticks)
    assert len({tick for tick, _, _, _ in ticks}) == len(ticks)
    # No gap while a daemon lived, the SIGKILL included; one jump over
    # the time no daemon ran, which made one order.
    gaps = _gaps(ticks)
    assert gaps[:len(lived) - 1] == [EVERY] * (len(lived) - 1), gaps
    outage = gaps[len(lived) - 1]
    assert outage >= 4 * EVERY and outage % EVERY == 0, gaps
    assert gaps[len(lived):] == [EVERY] * (len(gaps) - len(lived)), gaps
    assert 'missed ticks before it made no order of their own' in \
        third.log()

    shown = cluster.manage_json('order', 'show', ticks[-1][1])
    assert (shown['schedule_id'], shown['project_id']) == (
        schedule['id'], 'renewals')
    after = cluster.manage_json('schedule', 'show', schedule['id'])
    assert after['last_order_id'] == ticks[-1][1]
    assert after['last_tick_at'].startswith(
        ticks[-1][0].isoformat(sep=' '))
    assert workers.stop() == 0


def _refused(cluster, *args):
    done = processes.manage(cluster.config, 'schedule', 'create', *args,
                            check=False, env=cluster.env)
    assert done.returncode != 0
    return done.stderr


def test_schedule_commands(deployment):
    cluster = deployment(OPTIONS)
    every = cluster.manage_json('schedule', 'create', '--type',
                                'certificate', '--every', '30d', '--meta',
                                '{"unavailable_attempts": 1}')
    cron = cluster.manage_json('schedule', 'create', '--type', 'fanout',
                               '--cron', '0 3 * * *', '--project', 'p',
                               '--priority', '5')
    assert (every['every_seconds'], every['cron'], every['project_id'],
            every['last_order_id']) == (30 * 86400, None, 'default', None)
    created = datetime.datetime.fromisoformat(every['created_at'])
    assert datetime.datetime.fromisoformat(every['next_tick_at']) == \
        created.replace(microsecond=0) + datetime.timedelta(days=30)
    assert (cron['cron'], cron['priority'], cron['type']) == (
        '0 3 * * *', 5, 'fanout')
    assert cron['next_tick_at'].endswith('03:00:00.000')

    listed = cluster.manage_json('schedule', 'list')
    assert [s['id'] for s in listed] == [every['id'], cron['id']]
    assert [s['id'] for s in cluster.manage_json(
        'schedule', 'list', '--project', 'p')] == [cron['id']]
    shown = cluster.manage_json('schedule', 'show', every['id'])
    assert shown == every

    deleted = processes.manage(cluster.config, 'schedule', 'delete',
                               every['id'], env=cluster.env)
    assert every['id'] in deleted.stdout
    assert [s['id'] for s in cluster.manage_json('schedule', 'list')] == [
        cron['id']]
    missing = processes.manage(cluster.config, 'schedule', 'show',
                               every['id'], check=False, env=cluster.env)
    assert missing.returncode != 0 and 'no schedule' in missing.stderr

    assert 'a duration is an integer and a unit' in _refused(
        cluster, '--type', 'certificate', '--every', '2w')
    assert '1 second to 3650 days' in _refused(
        cluster, '--type', 'certificate', '--every', '0s')
    assert "the minute field '61'" in _refused(
        cluster, '--type', 'certificate', '--cron', '61 * * * *')
    assert 'five fields' in _refused(
        cluster, '--type', 'certificate', '--cron', '0 3 * *')
    assert 'matches no date' in _refused(
        cluster, '--type', 'certificate', '--cron', '0 0 31 2 *')
    assert 'unknown order type' in _refused(
        cluster, '--type', 'nope', '--every', '1h')
    assert 'meta is invalid at $.unavailable_attempts' in _refused(
        cluster, '--type', 'certificate', '--every', '1h', '--meta',
        '{"unavailable_attempts": -1}')
    assert 'not allowed with argument' in _refused(
        cluster, '--type', 'certificate', '--every', '1h', '--cron',
        '0 3 * * *')
    assert 'must be an integer from 0 to 9' in _refused(
        cluster, '--type', 'certificate', '--every', '1h', '--priority',
        '10')
    assert [s['id'] for s in cluster.manage_json('schedule', 'list')] == [
        cron['id']]
