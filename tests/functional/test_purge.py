"""The purge of old finished orders: ``barbican-retry-manage db purge``
and the retry daemons' own (``[database] retention_days``).

Real barbican-worker and barbican-retry processes, RabbitMQ and each
database: orders are created with ``order create``, run to ACTIVE or
ERROR by the worker pool, cancelled with ``order cancel``, then made old
by moving their ``updated_at`` back with SQL.
"""

import datetime
import json

import sqlalchemy as sa

from tests.functional import processes
from tests.functional import workflows
from worker.db import locks
from worker.db import models
from worker.db import orders as orders_repository
from worker import order_types
from worker.order_types import certificate

ORDERS = models.Order.__table__
RUNS = models.OrderStepRun.__table__
STEPS = models.OrderStep.__table__
REQUEST = certificate.CertificateOrder.steps[0].name

OPTIONS = dict(workflows.FAST, **{
    # An order whose authority is unavailable 5 times fails at its 2nd.
    'step:certificate.%s' % REQUEST: {'max_attempts': 2,
                                      'backoff_base_seconds': 0.2,
                                      'backoff_max_seconds': 0.5}})


def _create(cluster, count, meta=None):
    return workflows.create(cluster, count, meta, order_type='certificate')


def _backdate(database, order_ids, days):
    """Make the orders' last change ``days`` ago."""
    now = datetime.datetime.utcnow()
    with database.engine.begin() as connection:
        # A value, not SQL arithmetic: SQLite keeps times as text.
        connection.execute(
            sa.update(ORDERS).where(ORDERS.c.id.in_(order_ids)).values(
                updated_at=now - datetime.timedelta(days=days)))


def _rows(database, table, order_ids):
    column = table.c.id if table is ORDERS else table.c.order_id
    with database.engine.connect() as connection:
        return connection.execute(
            sa.select(sa.func.count()).select_from(table)
            .where(column.in_(order_ids))).scalar_one()


def _purge(cluster, *args, check=True):
    return processes.manage(cluster.config, 'db', 'purge', *args,
                            check=check, env=cluster.env)


def _purged(cluster, *args):
    counts = json.loads(_purge(cluster, *args, '-f', 'json').stdout)
    return {name: counts[name] for name in (
        'orders', 'order_steps', 'order_retry_tasks', 'notification_events',
        'order_step_runs')}


def _counts(orders, steps, runs):
    return {'orders': orders, 'order_steps': steps, 'order_retry_tasks': 0,
            'notification_events': 0, 'order_step_runs': runs}


def test_db_purge_deletes_old_finished_orders_and_their_rows(
        deployment, database):
    cluster = deployment(OPTIONS)
    workers, retry = workflows.start(cluster)
    active = _create(cluster, 4)
    failed = _create(cluster, 2, {'unavailable_attempts': 5})
    workflows.wait_status(database, active, models.ACTIVE, 60)
    workflows.wait_status(database, failed, models.ERROR, 60)
    workers.stop()
    retry.stop()
    # With no worker running, it stays PENDING.
    [pending, cancelled] = _create(cluster, 2)
    processes.manage(cluster.config, 'order', 'cancel', cancelled,
                     env=cluster.env)
    fresh = active.pop()
    old = active + failed + [cancelled]
    _backdate(database, old + [pending], 10)
    _backdate(database, [fresh], 0)

    # Certificate orders have two steps each; each run of them left a row
    # in their history (the failed ones several).
    runs_failed = _rows(database, RUNS, failed)
    runs_rest = _rows(database, RUNS, active + [cancelled])
    runs_kept = _rows(database, RUNS, [pending, fresh])
    assert runs_failed >= 2 * 2 and runs_rest >= 3 * 2 and runs_kept >= 2
    assert _purged(cluster, '--older-than', '9.5', '--dry-run') == \
        _counts(6, 12, runs_failed + runs_rest)
    assert _rows(database, ORDERS, old) == 6
    assert _purged(cluster, '--older-than', '10.5') == _counts(0, 0, 0)

    assert _purged(cluster, '--older-than', '9.5', '--status',
                   'error') == _counts(2, 4, runs_failed)
    assert _purged(cluster, '--older-than', '9.5', '--batch-size', '2',
                   '--status', 'ACTIVE,CANCELLED') == _counts(4, 8, runs_rest)
    for table, kept in ((ORDERS, 2), (STEPS, 4), (RUNS, runs_kept)):
        assert _rows(database, table, old) == 0
        assert _rows(database, table, [pending, fresh]) == kept
    with database.session() as session:
        assert orders_repository.count_by_status(session) == {
            models.ACTIVE: 1, models.PENDING: 1}

    refused = _purge(cluster, '--older-than', '1', '--status',
                     'ERROR,PENDING', check=False)
    assert refused.returncode == 2
    assert 'only finished orders are purged' in refused.stderr
    refused = _purge(cluster, '--older-than', '-1', check=False)
    assert refused.returncode == 2 and 'must be at least 0' in \
        refused.stderr
    refused = _purge(cluster, '--older-than', '1', '--batch-size', '0',
                     check=False)
    assert refused.returncode == 2 and 'must be at least 1' in \
        refused.stderr


def _finished(database, count, days):
    """``count`` ACTIVE orders last changed ``days`` ago; their ids."""
    now = datetime.datetime.utcnow()
    with database.session() as session, session.begin():
        created = [orders_repository.create(
            session, order_types.get('certificate'), {}, now).id
            for _ in range(count)]
        assert orders_repository.complete_many(
            session, [(order_id, {}) for order_id in created], now) == count
    _backdate(database, created, days)
    return created


def _purges(daemons):
    return sum(daemon.log().count('Purged ') for daemon in daemons)


def test_retry_daemons_purge_old_orders_one_at_a_time(deployment, database):
    interval = 20
    cluster = deployment(dict(workflows.FAST, database={
        'retention_days': 1, 'purge_interval_seconds': interval}))
    old = _finished(database, 5, 2)
    young = _finished(database, 1, 0.5)
    # Both look every interval / 4 seconds, and race for the first purge.
    daemons = [cluster.start('barbican-retry', 'retry-%d' % number)
               for number in (1, 2)]
    processes.wait_for(lambda: _rows(database, ORDERS, old) == 0, 30,
                       'the old orders to be purged')
    processes.wait_for(lambda: _purges(daemons) == 1, 10, 'its log line')
    assert _rows(database, RUNS, old) == 0

    # Within the interval no daemon purges again, however often they look:
    # the next purge starts an interval after the end of the first.
    with database.session() as session:
        ended = locks.get(session, models.ORDER_PURGE_LOCK).created_at
    older = _finished(database, 3, 2)
    processes.wait_for(lambda: _rows(database, ORDERS, older) == 0,
                       2 * interval, 'the next purge')
    waited = (datetime.datetime.utcnow() - ended).total_seconds()
    assert waited >= interval, waited
    # Its line is logged once the purge has ended.
    processes.wait_for(lambda: _purges(daemons) == 2, 10, 'its log line')
    assert _rows(database, ORDERS, young) == 1
    assert 'Purged 5 orders' in ''.join(daemon.log() for daemon in daemons)
    for daemon in daemons:
        assert daemon.stop() == 0
