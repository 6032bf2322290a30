"""A worker that cannot be flooded: ``[worker] max_queued_steps``.

One real worker process (4 threads, ``max_queued_steps`` = 8, a prefetch
of 2) gets a burst of 120 single-step orders, one cast each as the API
casts them, each step taking 0.3 s. While it works, RabbitMQ still holds
the rest of the burst, ready in the topic's queue (read with a passive
declare): the worker never held more than its threads, its room, the one
message its listener waits with and the prefetch. No retry daemon runs,
so a cast the worker took and lost would leave its order PENDING: every
order ends ACTIVE.
"""

import concurrent.futures
import time
import urllib.parse

import kombu
from oslo_config import cfg
from oslo_utils import timeutils

from tests.functional import processes
from tests import plugin
from worker.api import commands
from worker.api import requests
from worker.db import models
from worker.db import orders
from worker.order_types import base
from worker import rpc
from worker import rpcapi
from worker import values

ORDERS = 120
THREADS = 4
ROOM = 8
PREFETCH = 2
HOLD_SECONDS = 0.3
#: What the worker may hold beyond its threads and its room: the message
#: its listener waits with, those the broker sent ahead (the prefetch),
#: one the connection's heartbeat may read meanwhile, and the steps that
#: end between the two reads of a sample (one per thread).
SLACK = 1 + PREFETCH + 1 + THREADS


def test_a_burst_waits_in_the_broker_and_none_is_lost(deployment, database,
                                                      transport_url):
    cluster = deployment({
        'DEFAULT': {'executor_thread_pool_size': THREADS},
        'worker': {'workers': 1, 'max_queued_steps': ROOM},
        'oslo_messaging_rabbit': {'rabbit_qos_prefetch_count': PREFETCH}})
    workers = cluster.start('barbican-worker', 'worker')
    workers.wait_for_log('serving topic')

    _cast_burst(database, transport_url, cluster.topic)
    held = []
    with kombu.Connection(_amqp_url(transport_url)) as connection:
        channel = connection.channel()
        while True:
            # ACTIVE first, then the queue: a message taken meanwhile
            # counts as held, never the other way round.
            active = _active(database)
            _, ready, _ = channel.queue_declare(queue=cluster.topic,
                                                passive=True)
            if not ready:
                break
            held.append((ORDERS - active - ready, ready))
            time.sleep(0.2)

    processes.wait_for(lambda: processes.all_active(database, ORDERS), 60,
                       '%d orders ACTIVE' % ORDERS)
    # The broker held most of the burst while the worker began, and the
    # worker never held more than its bound.
    assert held and held[0][1] >= ORDERS // 2, held
    assert max(count for count, _ in held) <= THREADS + ROOM + SLACK, held
    assert 'Dropped' not in workers.log()


def _cast_burst(database, transport_url, topic):
    """Create the orders, then cast their steps one message each, from
    several threads at once (as API servers would)."""
    workflow = base.check('single_step', plugin.SingleStep)
    created = commands.create(database, requests.CreateOrders(
        workflow, {'hold_seconds': HOLD_SECONDS}, ORDERS,
        origin=orders.NO_ORIGIN), timeutils.utcnow()).orders
    # NOTE: oslo.messaging registers some options on the global CONF only.
    transport = rpc.get_transport(cfg.CONF, url=transport_url)
    try:
        api = rpcapi.WorkerAPI.from_transport(transport, topic)
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(
                lambda order: api.run_steps(
                    [values.StepRef('issue', order.id, 0, None)]),
                created))
    finally:
        transport.cleanup()


def _active(database):
    with database.session() as session:
        return orders.count_by_status(session).get(models.ACTIVE, 0)


def _amqp_url(transport_url):
    return urllib.parse.urlparse(transport_url)._replace(
        scheme='amqp').geturl()
