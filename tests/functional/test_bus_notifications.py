"""oslo.messaging notifications of orders, end to end.

Real barbican-worker and barbican-retry processes, the operator commands,
RabbitMQ and each database run the recorded fan-out type; a real
notification listener (``oslo_messaging.get_notification_listener``) in
the test process hears what they announce on a topic of the test's own.
"""

import collections
import re
import threading
import time

from oslo_config import cfg
import oslo_messaging
import pytest

from tests.functional import processes
from tests.functional import workflows
from worker.db import models
from worker import rpc

HOST = 'bus-node'


class Listener:
    """A notification listener on ``topic``: ``events`` are ``(publisher
    id, event type, payload)`` in the order they arrived, handled one at
    a time."""

    def __init__(self, transport_url, topic):
        # A configuration of its own: one thread handles the messages, so
        # that they are recorded in the order they arrive.
        self._conf = cfg.ConfigOpts()
        self._conf([])
        # The services' exchange and durable queues.
        rpc.set_defaults()
        self._transport = oslo_messaging.get_notification_transport(
            self._conf, url=transport_url)
        rpc.executor_threads(self._conf)
        self._conf.set_override('executor_thread_pool_size', 1)
        self.events = []
        self._lock = threading.Lock()
        self._server = oslo_messaging.get_notification_listener(
            self._transport, [oslo_messaging.Target(topic=topic)], [self],
            executor='threading')

    def start(self):
        self._server.start()
        return self

    def stop(self):
        self._server.stop()
        self._server.wait()
        self._transport.cleanup()

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        """The endpoint of INFO notifications."""
        with self._lock:
            self.events.append((publisher_id, event_type, payload))

    def by_order(self, count):
        """``{order_id: [(event type, payload)]}`` once ``count`` events
        arrived."""
        processes.wait_for(lambda: len(self.events) >= count, 60,
                           '%d notifications' % count)
        found = collections.defaultdict(list)
        with self._lock:
            for publisher_id, event_type, payload in self.events:
                assert publisher_id == 'barbican-retry.%s' % HOST
                found[payload['order_id']].append((event_type, payload))
        return found


def _options(overrides):
    return workflows.options({'DEFAULT': {'host': HOST}}, overrides)


def test_every_change_of_an_order_is_announced_in_order(
        deployment, database, transport_url):
    topic = 'notifications-' + processes.new_topic()
    listener = Listener(transport_url, topic).start()
    cluster = deployment(_options({'oslo_messaging_notifications': {
        'driver': 'messagingv2', 'topics': topic}}))
    workers, _ = workflows.start(cluster)
    try:
        [active] = workflows.create(cluster)
        [failing] = workflows.create(
            cluster, meta={'fail_step': 'issue', 'fail_runs': 1})
        [held] = workflows.create(
            cluster, meta={'hold_seconds': 30, 'hold_step': 'check_domains'})
        workflows.wait_status(database, [failing], models.ERROR, 30)
        processes.manage(cluster.config, 'order', 'resume', failing,
                         env=cluster.env)
        workflows.wait_running(database, held, 'check_domains')
        # Cancelled by its compensation step's end, on a worker.
        processes.manage(cluster.config, 'order', 'cancel', held,
                         env=cluster.env)
        workflows.wait_status(database, [active, failing], models.ACTIVE,
                              30)
        workflows.wait_status(database, [held], models.CANCELLED, 30)
        found = listener.by_order(8)
    finally:
        listener.stop()

    assert {order_id: [(event_type, payload['status'])
                       for event_type, payload in events]
            for order_id, events in found.items()} == {
        active: [('order.create', models.PENDING),
                 ('order.active', models.ACTIVE)],
        failing: [('order.create', models.PENDING),
                  ('order.error', models.ERROR),
                  ('order.resumed', models.PENDING),
                  ('order.active', models.ACTIVE)],
        held: [('order.create', models.PENDING),
               ('order.cancelled', models.CANCELLED)]}
    for order_id, events in found.items():
        times = [payload['time'] for _, payload in events]
        assert times == sorted(times)
        for event_type, payload in events:
            assert (payload['payload_version'], payload['order_id'],
                    payload['project_id'], payload['event']) == (
                '1.0', order_id, models.DEFAULT_PROJECT, event_type)
            assert re.fullmatch(r'\d{4}-\d\d-\d\dT[\d:.]+Z', payload['time'])
    [error] = [payload for event_type, payload in found[failing]
               if event_type == 'order.error']
    assert error['detail']['reason'].startswith('step issue failed')


@pytest.mark.parametrize('backend', ['sqlite'])
def test_a_dead_notification_broker_neither_fails_nor_slows_orders(
        deployment, database, backend):
    worker_port = processes.free_port()
    cluster = deployment(_options({
        # Nothing listens there: each send is refused (no retry).
        'oslo_messaging_notifications': {
            'driver': 'messagingv2', 'retry': 0,
            'transport_url': 'rabbit://guest:guest@127.0.0.1:%d/'
                             % processes.free_port()},
        'metrics': {'enabled': 'true', 'worker_port': worker_port,
                    'scheduler_port': processes.free_port()}}))
    workers, _ = workflows.start(cluster)
    started = time.monotonic()
    orders = workflows.create(cluster, count=20)
    workflows.wait_status(database, orders, models.ACTIVE, 30)
    print('20 orders ACTIVE in %.1f s' % (time.monotonic() - started))

    def counted():
        text = processes.scrape(worker_port)
        return {result: float(re.search(
            r'^barbican_retry_bus_notifications_total\{result="%s"\} (\S+)'
            % result, text, re.M).group(1))
            for result in ('sent', 'dropped', 'failed')}

    processes.wait_for(lambda: counted()['failed'] == 20, 30,
                       'the 20 failed announcements counted')
    assert counted() == {'sent': 0, 'dropped': 0, 'failed': 20}
    # One line for all of them, without oslo.messaging's own.
    assert workers.log().count('Could not send the notification') == 1
    assert 'Payload=' not in workers.log()
