"""Counting casts where the workers would receive them, on RabbitMQ."""

import collections
import contextlib
import datetime
import threading

from oslo_config import cfg
import oslo_messaging as messaging

from worker.db import orders
from worker.db import retry_tasks
from worker import rpc


class CountingEndpoint:
    """Counts the ``check_certificate_status`` casts it receives."""

    target = messaging.Target(version=rpc.RPC_API_VERSION)

    def __init__(self):
        self.received = collections.Counter()
        self._lock = threading.Lock()

    @messaging.expose
    def check_certificate_status(self, ctxt, order_id, generation):
        """Count one cast (the worker's method, doing nothing else)."""
        with self._lock:
            self.received[order_id] += 1

    @messaging.expose
    def run_steps(self, ctxt, steps):
        """Count each step of a message of several (RPC 1.1)."""
        for _, order_id, generation in steps:
            self.check_certificate_status(ctxt, order_id, generation)

    def total(self):
        """Return how many casts arrived, duplicates included."""
        with self._lock:
            return sum(self.received.values())


@contextlib.contextmanager
def counting_server(transport_url, topic):
    """Serve a ``CountingEndpoint`` on ``topic``; yields the endpoint."""
    # Global CONF: oslo.messaging registers some options there only.
    transport = rpc.get_transport(cfg.CONF, url=transport_url)
    endpoint = CountingEndpoint()
    server = rpc.get_server(transport, topic, 'counter', [endpoint])
    server.start()
    try:
        yield endpoint
    finally:
        server.stop()
        server.wait()
        transport.cleanup()


def add_due_retries(database, count):
    """Insert ``count`` orders, each with one due retry row; their ids."""
    due = datetime.datetime.utcnow() - datetime.timedelta(seconds=1)
    ids = set()
    with database.session() as session, session.begin():
        for _ in range(count):
            order = orders.create(session, 'certificate', {}, due)
            retry_tasks.add(session, order.id, 'check_certificate_status',
                            due, args=[order.id], kwargs={'generation': 0})
            ids.add(order.id)
    return ids
