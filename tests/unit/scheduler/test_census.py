"""The census a retry daemon exports: processes alive by their heartbeats,
unfinished orders by status, parked rows; read on the in-memory store."""

import datetime

from scheduler import census
from scheduler import liveness
from scheduler import metrics
from tests import config
from tests import singular
from worker.db import memory
from worker.db import models
from worker import order_types

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)


def _at(seconds):
    return NOW + datetime.timedelta(seconds=seconds)


def _populated():
    database = memory.InMemoryDatabase()
    repositories = database.repositories
    workflow = order_types.get('certificate')
    with database.session() as session, session.begin():
        services = repositories.services
        services.heartbeat(session, '1@a', models.WORKER, 'a', 1, _at(-1))
        services.heartbeat(session, '2@a', models.WORKER, 'a', 2, _at(-600))
        services.heartbeat(session, '3@b', models.WORKER, 'b', 3, _at(0))
        orders = [repositories.orders.create(session, workflow, {}, _at(-9))
                  for _ in range(3)]
        singular.complete(repositories.orders, session, orders[0].id, NOW, {})
        task = singular.add_retry(repositories.retry_tasks, session,
                                  orders[1].id, 'x', _at(-5))
        singular.add_retry(repositories.retry_tasks, session, orders[2].id,
                           'x', _at(60))
        # A delivery of the second order, and an unavailable URL.
        url = repositories.notifications.add_url(session, 'https://h/', NOW)
        repositories.steps.create(session, orders[1].id, ['notify:1'],
                                  {'notify:1'}, NOW)
        repositories.notifications.url_failed(session, url.id, NOW, 'x',
                                              True)
        # Two pauses a day old, one new.
        repositories.pauses.add_many(session, 'resource', ['ca:x', 'ca:y'],
                                     None, _at(-86401))
        repositories.pauses.add_many(session, 'order_type', ['certificate'],
                                     'CA down', _at(-10))
    with database.session() as session, session.begin():
        [row] = repositories.retry_tasks.due(session, NOW, 10)
        assert row.id == task
        repositories.retry_tasks.park(session, row, 'no such step')
    return database


def test_the_census_counts_live_processes_unfinished_orders_parked_rows():
    conf = config.make_conf(service_down_time=60)
    counted = census.take(_populated(), liveness.Cutoffs.at(NOW, conf),
                          conf)

    assert counted == census.Census(
        services_alive={models.SCHEDULER: 0, models.WORKER: 2},
        unfinished_orders={models.PENDING: 2, models.CANCELLING: 0},
        parked_rows=1,
        deliveries_waiting={census.SENDING: 1, census.PAUSED: 0},
        unavailable_urls=1,
        paused={'order_type': 1, 'topic': 0, 'resource': 2, 'order': 0,
                'schedule': 0},
        pauses_too_old=2)

    exported = metrics.SchedulerMetrics()
    exported.record_census(counted)
    sample = exported.registry.get_sample_value
    assert sample('barbican_retry_services_alive', {'kind': 'worker'}) == 2
    assert sample('barbican_retry_services_alive',
                  {'kind': 'scheduler'}) == 0
    assert sample('barbican_retry_unfinished_orders',
                  {'status': 'PENDING'}) == 2
    assert sample('barbican_retry_parked_rows') == 1
    assert sample('barbican_retry_notification_deliveries_waiting',
                  {'state': 'sending'}) == 1
    assert sample('barbican_retry_notification_urls_unavailable') == 1
    assert sample('barbican_retry_paused', {'target': 'resource'}) == 2
    assert sample('barbican_retry_pauses_too_old') == 2
