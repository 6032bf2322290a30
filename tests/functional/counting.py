"""Counting casts where the workers would receive them, on RabbitMQ."""

import collections
import contextlib
import datetime
import threading

from oslo_config import cfg
import oslo_messaging as messaging

from tests import singular
from worker.db import models
from worker.db import orders
from worker.db import retry_tasks
from worker.db import steps as order_steps
from worker import order_types
from worker import rpc


class CountingEndpoint:
    """Counts, by order, the steps cast to it."""

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


def waiting_order(session, now, retry_at=None):
    """Insert a certificate order waiting for its status check; its id.

    Its request step is DONE and its ``check_certificate_status`` step
    PENDING under token 0, not in flight, as a worker leaves an order
    between the two steps; with ``retry_at``, its retry row is due then.
    """
    order = orders.create(session, order_types.get('certificate'), {}, now)
    first = 'process_type_order'
    assert singular.claim(order_steps, session, order.id, first, 0, now,
                          'test@host', now)
    assert singular.finish(order_steps, session, order.id, first, 1, now,
                           models.STEP_DONE, output={})
    singular.start(order_steps, session, order.id,
                   ['check_certificate_status'], now, dispatched=False)
    if retry_at is not None:
        singular.add_retry(retry_tasks, session, order.id,
                           'check_certificate_status', retry_at,
                           args=[order.id], kwargs={'generation': 0}, now=now)
    return order.id


def add_due_retries(database, count):
    """Insert ``count`` orders, each with one due retry row; their ids."""
    due = datetime.datetime.utcnow() - datetime.timedelta(seconds=1)
    with database.session() as session, session.begin():
        return {waiting_order(session, due, retry_at=due)
                for _ in range(count)}
