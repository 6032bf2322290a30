"""Schedules that people can trust, with a real barbican-retry daemon on
each database over RabbitMQ: overlap policies, bounded backfill after an
outage, trigger now, and time zones.

No worker runs: a tick's order stays PENDING (open) until the test ends
it, so that what a tick does while the order before is open is seen. The
waits are for rows, with timeouts far above the two-second ticks; the
ticks compared are read from the orders' keys, never from a clock.
"""

import datetime

import sqlalchemy as sa

from tests.functional import processes
from tests.functional import workflows
from worker.common import ticks
from worker.db import models

ORDERS = models.Order.__table__
SCHEDULES = models.Schedule.__table__
EVERY = 2
OPTIONS = workflows.options({'scheduler': {'schedule_check_seconds': 1}})


def _orders(database, schedule_id):
    """``[(tick, order id, status)]`` of the schedule's tick orders, by
    tick (a triggered order has no tick: None first)."""
    with database.engine.connect() as connection:
        found = connection.execute(
            sa.select(ORDERS.c.idempotency_key, ORDERS.c.id,
                      ORDERS.c.status)
            .where(ORDERS.c.schedule_id == schedule_id)).all()
    prefix = 'schedule:%s:' % schedule_id
    made = []
    for key, order_id, status in found:
        tail = key[len(prefix):]
        tick = None if tail.startswith('trigger:') else \
            datetime.datetime.fromisoformat(tail.rstrip('Z'))
        made.append((tick, order_id, status))
    return sorted(made, key=lambda row: (row[0] is not None, row[0] or 0))


def _wait(what, predicate, timeout=45):
    return processes.wait_for(predicate, timeout, what)


def _create(cluster, *args):
    return cluster.manage_json('schedule', 'create', '--type',
                               'certificate', '--meta',
                               '{"unavailable_attempts": 1}', *args)


def _cancel(cluster, order_id):
    processes.manage(cluster.config, 'order', 'cancel', order_id,
                     env=cluster.env)


def test_overlap_policies_with_a_real_daemon(deployment, database):
    cluster = deployment(OPTIONS)
    every = '%ds' % EVERY
    skip = _create(cluster, '--every', every, '--overlap', 'skip')
    cancel = _create(cluster, '--every', every, '--overlap',
                     'cancel-previous')
    buffer = _create(cluster, '--every', every, '--overlap', 'buffer-one')
    allow = _create(cluster, '--every', every)
    retry = cluster.start('barbican-retry', 'retry')

    # allow: an order a tick beside the open ones; cancel-previous: each
    # new tick cancels the order before it.
    _wait('4 orders of the allow schedule',
          lambda: len(_orders(database, allow['id'])) >= 4)
    cancelled = _wait('3 orders of the cancel-previous schedule', lambda: (
        found := _orders(database, cancel['id'])) and len(found) >= 3 and
        found)
    assert all(status == models.PENDING
               for _, _, status in _orders(database, allow['id']))
    assert [status for _, _, status in cancelled[:-1]] == [
        models.CANCELLED] * (len(cancelled) - 1)
    # skip and buffer-one: one order while it is open; buffer-one holds
    # the latest tick.
    [(first_skip, skip_order, _)] = _orders(database, skip['id'])
    [(_, buffer_order, _)] = _orders(database, buffer['id'])
    held = cluster.manage_json('schedule', 'show', buffer['id'])
    assert held['buffered_tick_at'] is not None
    assert 'overlap buffer-one' in retry.log()

    # The open orders end: the held tick makes its order, and skip's
    # next tick makes one.
    _cancel(cluster, buffer_order)
    _cancel(cluster, skip_order)
    after_buffer = _wait('the held tick\'s order', lambda: (
        found := _orders(database, buffer['id'])) and len(found) == 2 and
        found)
    held_tick = after_buffer[1][0]
    assert held_tick > after_buffer[0][0]
    assert (held_tick - after_buffer[0][0]).total_seconds() % EVERY == 0
    after_skip = _wait('skip\'s next order', lambda: (
        found := _orders(database, skip['id'])) and len(found) == 2 and
        found)
    # The ticks skipped while it was open made no order of their own.
    assert (after_skip[1][0] - first_skip).total_seconds() > EVERY
    assert retry.stop() == 0


def test_backfill_after_an_outage_is_bounded(deployment, database):
    cluster = deployment(workflows.options(
        OPTIONS, {'scheduler': {'schedule_backfill_max_runs': 3}}))
    schedule = _create(cluster, '--every', '%ds' % EVERY)
    # Every daemon down for 40 ticks: the schedule's next tick moved 80 s
    # into the past.
    with database.engine.begin() as connection:
        moved = connection.execute(
            sa.select(SCHEDULES.c.next_tick_at)
            .where(SCHEDULES.c.id == schedule['id'])).scalar() - \
            datetime.timedelta(seconds=40 * EVERY)
        connection.execute(
            sa.update(SCHEDULES).where(SCHEDULES.c.id == schedule['id'])
            .values(next_tick_at=moved))
    retry = cluster.start('barbican-retry', 'retry')
    _wait('the backfilled orders',
          lambda: len(_orders(database, schedule['id'])) >= 3)
    retry.wait_for_log('missed ticks before them made no order')
    assert retry.stop() == 0
    made = _orders(database, schedule['id'])
    gaps = [(later[0] - earlier[0]).total_seconds()
            for earlier, later in zip(made, made[1:])]
    # The latest three missed ticks, one interval apart, then the ticks
    # the daemon saw live; none of the older missed ones made an order.
    assert gaps == [EVERY] * len(gaps), gaps
    assert made[0][0] >= moved + datetime.timedelta(seconds=30 * EVERY)


def test_trigger_and_a_time_zone(deployment, database):
    cluster = deployment(OPTIONS)
    workers, retry = workflows.start(cluster)
    zoned = _create(cluster, '--cron', '30 2 * * *', '--timezone',
                    'Europe/Paris', '--overlap', 'skip')
    created = datetime.datetime.fromisoformat(zoned['created_at'])
    assert datetime.datetime.fromisoformat(zoned['next_tick_at']) == \
        ticks.first_tick(ticks.Spec.of(None, '30 2 * * *', 'Europe/Paris'),
                         created)
    assert zoned['timezone'] == 'Europe/Paris'

    order = cluster.manage_json('schedule', 'trigger', zoned['id'])
    assert (order['schedule_id'], order['status']) == (zoned['id'],
                                                       models.PENDING)
    # A real order: the worker runs it to ACTIVE.
    workflows.wait_status(database, [order['id']], models.ACTIVE, 60)
    shown = cluster.manage_json('schedule', 'show', zoned['id'])
    assert shown['next_tick_at'] == zoned['next_tick_at']
    assert shown['last_order_id'] == order['id']
    refused = processes.manage(cluster.config, 'schedule', 'create',
                               '--type', 'certificate', '--cron',
                               '0 3 * * *', '--timezone', 'Mars/Olympus',
                               check=False, env=cluster.env)
    assert refused.returncode != 0
    assert "unknown time zone 'Mars/Olympus'" in refused.stderr
    assert retry.stop() == 0 and workers.stop() == 0
