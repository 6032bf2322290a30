"""Raw kombu on the product's RabbitMQ: sink queues and the publish reference.

oslo.messaging publishes every cast with publisher confirms
(``confirm_publish=True`` in ``impl_rabbit.Connection``): the publishing
thread waits for the broker's ack of each message. The reference rate is
therefore kombu publishing the same kind of message the same way (same
size, persistent, to a queue as durable as the product's), on one
connection, one message at a time.
"""

import contextlib
import json
import time
import uuid

from amqp import exceptions as amqp_exceptions
import kombu

from tests.benchmarks import env


def _oslo_like_body(index):
    # The envelope oslo.messaging sends for a cast of run_steps with one
    # step, [step, order_id, generation]: same shape and size, so both
    # sides serialise and ship the same bytes.
    message = {
        'method': 'run_steps',
        'args': {'steps': [['check_certificate_status',
                            'b%s-%012d' % ('0' * 8, index), 0]]},
        'version': '1.1',
        '_unique_id': uuid.uuid4().hex,
    }
    return {'oslo.version': '2.0', 'oslo.message': json.dumps(message)}


def connection(kombu_url, confirm=True):
    """A kombu connection; ``confirm`` as oslo.messaging sets it."""
    return kombu.Connection(kombu_url,
                            transport_options={'confirm_publish': confirm})


def _bound_control_exchange(conn, durable):
    # The product's exchange may exist already, declared by the product
    # (or by earlier tests) with either durability: bind to it as it is,
    # and declare it only when missing, the way oslo.messaging would.
    existing = kombu.Exchange(env.CONTROL_EXCHANGE, type='topic',
                              passive=True)
    try:
        existing(conn.channel()).declare()
        return existing
    except amqp_exceptions.NotFound:
        exchange = kombu.Exchange(env.CONTROL_EXCHANGE, type='topic',
                                  durable=durable, auto_delete=False)
        exchange(conn.channel()).declare()
        return exchange


@contextlib.contextmanager
def sink_queue(kombu_url, topic, max_length=None):
    """A queue that collects the casts to ``topic``; deleted on exit.

    Yields a function returning the number of messages in the queue.
    ``max_length`` bounds what the broker keeps (oldest dropped first), for
    runs that cast more than anyone will read.
    """
    arguments = {}
    if max_length:
        arguments = {'x-max-length': max_length, 'x-overflow': 'drop-head'}
    durable = env.product_queues_durable()
    with connection(kombu_url) as conn:
        # Same durability as the queue the product's workers declare: a
        # durable queue makes the broker write each persistent message to
        # disk before it confirms it.
        queue = kombu.Queue('%s.sink' % topic,
                            _bound_control_exchange(conn, durable),
                            routing_key=topic, durable=durable,
                            auto_delete=False,
                            queue_arguments=arguments or None)
        channel = conn.channel()
        bound = queue(channel)
        bound.declare()

        def depth():
            return bound.queue_declare(passive=True).message_count
        try:
            yield depth
        finally:
            bound.delete()


def rows_in_sink(kombu_url, topic, messages):
    """Take ``messages`` messages off the sink of ``topic``; rows they cast.

    A ``run_steps`` message carries several rows, any other cast one.
    """
    rows = 0
    with connection(kombu_url, confirm=False) as conn:
        channel = conn.channel()
        for _ in range(messages):
            message = channel.basic_get(queue='%s.sink' % topic, no_ack=True)
            if message is None:
                break
            body = json.loads(json.loads(message.body)['oslo.message'])
            rows += (len(body['args']['steps'])
                     if body['method'] == 'run_steps' else 1)
    return rows


def wait_for_depth(depth, expected, timeout=30.0):
    """Wait until ``depth()`` reaches ``expected``; returns the last value."""
    deadline = time.monotonic() + timeout
    value = depth()
    while value < expected and time.monotonic() < deadline:
        time.sleep(0.1)
        value = depth()
    return value


def confirmed_publish_rate(kombu_url, count):
    """Publish ``count`` oslo-sized messages with confirms, one connection.

    The messages land in a queue of their own (as the product's casts land
    in the sink queue during the same measurement); the queue and exchange
    are deleted afterwards.

    :returns: dict with ``count``, ``seconds``, ``rate`` and ``delivered``.
    """
    name = env.new_topic('brbench_raw')
    durable = env.product_queues_durable()
    exchange = kombu.Exchange(name, type='topic', durable=durable,
                              auto_delete=False)
    queue = kombu.Queue(name, exchange, routing_key=name, durable=durable,
                        auto_delete=False)
    bodies = [_oslo_like_body(i) for i in range(count)]
    with connection(kombu_url) as conn:
        channel = conn.channel()
        queue(channel).declare()
        producer = kombu.Producer(channel, exchange=exchange)
        try:
            # Same call as impl_rabbit.Connection._publish.
            producer.publish(bodies[0], exchange=exchange, routing_key=name,
                             mandatory=False, expiration=None,
                             compression=None)
            started = time.perf_counter()
            for body in bodies[1:]:
                producer.publish(body, exchange=exchange, routing_key=name,
                                 mandatory=False, expiration=None,
                                 compression=None)
            seconds = time.perf_counter() - started
            delivered = queue(channel).queue_declare(
                passive=True).message_count
        finally:
            queue(channel).delete()
            exchange(channel).delete()
    return {'count': count - 1, 'seconds': seconds,
            'rate': (count - 1) / seconds, 'delivered': delivered - 1,
            'durable': durable}
