"""Hostile messages on the workers' topic, against a real worker.

Anyone who can publish on the topic can send anything: methods that do
not exist, arguments missing or of the wrong types, steps of orders that
are finished, deep JSON, bodies that are not JSON or not UTF-8, messages
of megabytes. Hypothesis generates a few hundred; each is logged and
dropped, the worker processes keep serving (the same pids: nothing
crashed or restarted), and nothing in the database changes.
"""

import json
import urllib.parse

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import kombu
from oslo_config import cfg
import oslo_messaging as messaging
import pytest

from tests.functional import processes
from worker.db import orders
from worker import rpc

# The exchange the workers' topic is bound in (rpc.set_defaults).
EXCHANGE = 'barbican_retry'
# Scalars of every JSON type, in lists and objects a few levels deep.
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() |
    st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=40),
    lambda inner: (st.lists(inner, max_size=4) |
                   st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12)
_METHODS = st.sampled_from(['run_steps', 'process_type_order',
                            'check_certificate_status', 'run_step',
                            '__init__', '_run_step', 'cancel_queued_steps',
                            'apply_deferred_results']) | st.text(max_size=20)
# Any name but those of RPCClient.cast's own parameters.
_ARGUMENT_NAMES = (st.sampled_from(['steps', 'order_id', 'generation',
                                    'context']) |
                   st.text(max_size=8)).filter(
                       lambda name: name not in ('self', 'ctxt', 'method'))


def _steps(finished):
    """``run_steps`` lists: well shaped or not, naming finished orders,
    unknown ones, or none."""
    names = st.sampled_from(['process_type_order',
                             'check_certificate_status']) | st.text()
    order_ids = st.sampled_from(finished) | st.uuids().map(str) | _JSON
    step = (st.tuples(names, order_ids, st.integers()).map(list) |
            st.lists(_JSON, max_size=5) | _JSON)
    return st.lists(step, max_size=60) | _JSON


def _amqp_url(transport_url):
    parsed = urllib.parse.urlparse(transport_url)
    return parsed._replace(scheme='amqp').geturl()


def _raw_bodies():
    """Bodies oslo.messaging would never send."""
    deep = 100000
    envelope = json.dumps({'oslo.version': '2.0',
                           'oslo.message': '[' * deep + ']' * deep})
    huge_steps = json.dumps({'oslo.version': '2.0', 'oslo.message':
                             json.dumps({'method': 'run_steps', 'args': {
                                 'steps': [['x' * 100, 'y', 1]] * 40000}})})
    return [b'\xff\xfe\xfa not utf-8', b'{"oslo.version": "2.0"',
            b'[' * deep + b']' * deep, envelope.encode(),
            json.dumps({'oslo.version': '2.0', 'oslo.message': 7}).encode(),
            json.dumps({'oslo.version': '9.9', 'oslo.message': '{}'}
                       ).encode(),
            json.dumps({'method': 'run_steps', 'args': {}}).encode(),
            huge_steps.encode(), b'x' * (4 * 1024 * 1024), b'']


def _state(database):
    """Every order and step, as they are."""
    with database.session() as session:
        found = {}
        for order in orders.list_orders(session):
            steps = database.repositories.steps.for_order(session, order.id)
            found[order.id] = (order.status, order.updated_at, sorted(
                (name, step.status, step.generation, step.owner)
                for name, step in steps.items()))
        retries = database.repositories.retry_tasks.list_tasks(session)
    return found, len(retries)


@pytest.mark.parametrize('backend', ['postgresql'])
def test_hostile_messages_are_dropped_and_the_worker_serves_on(
        deployment, database, transport_url, backend):
    cluster = deployment({
        'DEFAULT': {'service_down_time': 6, 'report_interval': 2},
        'scheduler': {'schedule_period_seconds': 1},
        'worker': {'workers': 2},
        'simple_certificate': {'delay_before_update_seconds': 0}})
    workers = cluster.start('barbican-worker', 'worker')
    workers.wait_for_log('serving topic', count=2)
    retry = cluster.start('barbican-retry', 'retry')
    finished = [row['id'] for row in cluster.manage_json(
        'order', 'create', '--type', 'certificate', '--count', '5')]
    processes.wait_for(lambda: processes.all_active(database, 5), 60,
                       '5 orders ACTIVE')
    pids = sorted(workers.children())
    before = _state(database)

    # The global CONF: oslo.messaging registers its tracing options there
    # only, and a client reads them.
    transport = rpc.get_transport(cfg.CONF, url=transport_url)
    client = messaging.get_rpc_client(
        transport, messaging.Target(topic=cluster.topic))

    @settings(max_examples=300, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(method=_METHODS,
           arguments=st.dictionaries(_ARGUMENT_NAMES, _JSON, max_size=3) |
           st.fixed_dictionaries({'steps': _steps(finished)}))
    def cast(method, arguments):
        client.cast({}, method, **arguments)

    cast()
    with kombu.Connection(_amqp_url(transport_url)) as connection:
        producer = connection.Producer()
        for body in _raw_bodies():
            producer.publish(body, exchange=EXCHANGE,
                             routing_key=cluster.topic,
                             content_type='application/json',
                             content_encoding='utf-8')
    transport.cleanup()

    # Served on: a new order goes through, on the same processes.
    new = cluster.manage_json('order', 'create', '--type', 'certificate')
    processes.wait_for(lambda: processes.all_active(database, 6), 120,
                       'the order cast after them ACTIVE')
    assert sorted(workers.children()) == pids
    after = _state(database)
    del after[0][new[0]['id']]
    assert after == before
    log = workers.log()
    assert 'malformed step' in log
    assert 'Failed to process message' in log
    assert workers.stop() == 0 and retry.stop() == 0
