"""barbican-retry-keystone-listener with the real Keystone: a project
deleted through Keystone's API loses its pending orders and schedules,
on each database.

Keystone sends its notifications to the suite's RabbitMQ
(``services.sh``); each test's listener reads them in a pool of its own
(``[keystone_listener] pool_name``), so that the tests side by side each
get every notification.
"""

import json
import time
import urllib.parse
import uuid

import kombu

from tests import config
from tests.functional import keystone as keystone_module
from tests.functional import processes
from worker import api
from worker import schedule_api

# From the project's deletion in Keystone to its orders' cancellation:
# a notification and a few writes, seconds; the bound only ends a test
# that would otherwise wait for ever.
BOUND_SECONDS = 60
READY = "Listening to Keystone's notifications"


def _listener(deployment):
    cluster = deployment({'keystone_listener': {
        'pool_name': 'brtest-keystone-%s' % uuid.uuid4().hex[:12],
        'topics': keystone_module.NOTIFICATIONS_TOPIC}})
    daemon = cluster.start('barbican-retry-keystone-listener',
                           'keystone-listener')
    daemon.wait_for_log(READY)
    return daemon


def _apis(database):
    orders = api.OrderAPI(database, config.make_conf())
    return orders, schedule_api.ScheduleAPI(database, orders._conf,
                                            orders=orders)


def _cancelled(orders, project_id, made):
    return all(orders.get(order.id, project_id=project_id).status ==
               api.CANCELLED for order in made)


def _publish_raw(transport_url, bodies):
    """Publish ``bodies`` (oslo.messaging's messagingv2 envelopes or
    anything else) where Keystone publishes its notifications."""
    url = urllib.parse.urlparse(transport_url)._replace(scheme='amqp')
    exchange = kombu.Exchange(keystone_module.NOTIFICATIONS_EXCHANGE,
                              type='topic', durable=False)
    with kombu.Connection(url.geturl()) as connection:
        producer = connection.Producer()
        for body in bodies:
            producer.publish(body, exchange=exchange,
                             routing_key='%s.info'
                             % keystone_module.NOTIFICATIONS_TOPIC,
                             content_type='application/json')


def _envelope(event_type, payload):
    message = {'message_id': str(uuid.uuid4()), 'publisher_id':
               'identity.test', 'event_type': event_type,
               'priority': 'INFO', 'payload': payload,
               'timestamp': '2026-11-28 12:00:00.000000'}
    return json.dumps({'oslo.version': '2.0',
                       'oslo.message': json.dumps(message)})


def test_a_deleted_project_loses_its_pending_orders_and_schedules(
        keystone, database, deployment):
    listener = _listener(deployment)
    suffix = uuid.uuid4().hex[:8]
    gone = keystone.create_project('doomed-%s' % suffix)
    kept = keystone.create_project('kept-%s' % suffix)
    orders, schedules = _apis(database)
    doomed = [orders.create('certificate', {}, project_id=gone)
              for _ in range(3)]
    survivor = orders.create('certificate', {}, project_id=kept)
    schedules.create('certificate', {}, project_id=gone, every='1h')
    kept_schedule = schedules.create('certificate', {}, project_id=kept,
                                     every='1h')
    try:
        deleted_at = time.monotonic()
        keystone.delete_project(gone)
        processes.wait_for(lambda: _cancelled(orders, gone, doomed),
                           BOUND_SECONDS, 'the orders of %s cancelled'
                           % gone)
        print('cancelled %.1f s after the delete in Keystone'
              % (time.monotonic() - deleted_at))
        listener.wait_for_log(
            'Project %s was deleted in Keystone: cancelled 3 pending '
            'orders, deleted 1 schedules' % gone)
        assert schedules.list(project_id=gone) == []
        for order in doomed:
            assert 'deleted in Keystone' in orders.get(
                order.id, project_id=gone).error_reason
        assert orders.get(survivor.id, project_id=kept).status == \
            api.PENDING
        assert schedules.list(project_id=kept) == [kept_schedule]
        # SIGTERM: a clean stop.
        assert listener.stop() == 0
    finally:
        keystone.delete_project(kept)
        orders.close()


def test_malformed_and_repeated_notifications_are_acknowledged(
        keystone, database, deployment, transport_url):
    listener = _listener(deployment)
    orders, _ = _apis(database)
    project = keystone.create_project('doomed-%s' % uuid.uuid4().hex[:8])
    made = orders.create('certificate', {}, project_id=project)
    try:
        _publish_raw(transport_url, [
            _envelope('identity.project.deleted', None),
            _envelope('identity.project.deleted', {'resource_info': 7}),
            _envelope('identity.project.deleted',
                      {'resource_info': 'x' * 1000}),
            # Not even JSON: oslo.messaging logs it and acknowledges it
            # before any endpoint sees it.
            'not json at all',
        ])
        listener.wait_for_log('Ignored the identity.project.deleted',
                              count=3)
        # Still listening: Keystone's own notification, then the same
        # one again (a redelivery).
        keystone.delete_project(project)
        processes.wait_for(lambda: _cancelled(orders, project, [made]),
                           BOUND_SECONDS, 'the order of %s cancelled'
                           % project)
        cancelled = orders.get(made.id, project_id=project)
        _publish_raw(transport_url, [_envelope(
            'identity.project.deleted', {'resource_info': project})])
        listener.wait_for_log('Project %s was deleted in Keystone'
                              % project, count=2)
        assert orders.get(made.id, project_id=project) == cancelled
        assert 'cancelled 0 pending orders, deleted 0 schedules' in \
            listener.log()
        assert listener.process.poll() is None
    finally:
        orders.close()
