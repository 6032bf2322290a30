"""oslo.context, oslo.log and oslo.messaging behaviour that request ids
(worker/context.py, worker/rpc.py ContextSerializer) rely on.

- oslo.context has no public way to clear a thread's current context:
  ``worker.context`` deletes ``_request_store.context``, as oslo.context's
  own fixture does; and a RequestContext makes itself current when built,
  even with ``overwrite=False`` when the thread has none.
- oslo.log takes a record's ``context`` (``LOG.info(..., context=c)``)
  before the thread's, even when it is None: batch code passes each
  line's own.
- A context's unknown keys (``orders``) reach a worker of the previous
  release, which has no serializer, as keys of its context dict, and its
  endpoint runs; ``RequestContext.from_dict`` ignores them.

Each test names, when it fails, the library change and the code that
depends on it.
"""

import logging
import threading

from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_log import formatters
from oslo_log import log as oslo_log
import oslo_messaging as messaging
from oslo_messaging._drivers import amqp
import pytest

from worker import context
from worker import rpc
from worker import values

_CONTEXT = 'worker/context.py'
ORDERS = {'o-1': ['req-order', 'req-global']}


@pytest.fixture(autouse=True)
def no_current_context():
    context.set_current(None)
    yield
    context.set_current(None)


def test_a_context_made_current_can_be_cleared():
    oslo_context.RequestContext(request_id='req-1')
    assert oslo_context.get_current() is not None, (
        'oslo.context: a RequestContext no longer makes itself current '
        'when built; %s _detached() works around that' % _CONTEXT)
    context.set_current(None)
    assert oslo_context.get_current() is None, (
        'oslo.context: deleting _request_store.context no longer clears '
        "the thread's context (%s _set_current)" % _CONTEXT)


def test_overwrite_false_still_sets_a_context_on_a_thread_without_one():
    oslo_context.RequestContext(request_id='req-1', overwrite=False)
    found = oslo_context.get_current()
    # If this changes, worker.context._detached() can just build.
    assert found is not None and found.request_id == 'req-1'


def _formatted(**extra):
    conf = cfg.ConfigOpts()
    oslo_log.register_options(conf)
    conf([])
    record = logging.LogRecord('worker.test', logging.INFO, __file__, 1,
                               'about order %s', ('o-1',), None)
    record.__dict__.update(extra)
    return formatters.ContextFormatter(config=conf).format(record)


def test_oslo_log_writes_the_records_context_before_the_threads():
    mine = context.for_ids(values.RequestIds('req-order', 'req-global'))
    with context.current(context.for_ids(values.RequestIds('req-thread'))):
        assert '[req-global req-order ' in _formatted(context=mine), (
            "oslo.log: a record's context no longer wins over the "
            "thread's; batch code's lines (worker/steps/apply.py) need it")
        line = _formatted(context=None)
        assert 'req-thread' not in line and '[-]' in line, (
            "oslo.log: a record's context=None now falls back to the "
            "thread's: a batch's line about an order without ids would "
            "carry another order's (worker/steps/apply.py)")
        assert '[None req-thread ' in _formatted()


def test_unknown_context_keys_survive_the_amqp_packing():
    message = {}
    amqp.pack_context(message, context.StepsContext(
        request_id='req-s', orders={'o-1': values.RequestIds(
            'req-order', 'req-global')}))
    unpacked = amqp.unpack_context(message).to_dict()
    assert unpacked['orders'] == ORDERS, (
        'oslo.messaging (rabbit driver): a context key of ours no longer '
        'reaches the server: worker/rpc.py ContextSerializer')
    assert oslo_context.RequestContext.from_dict(unpacked).request_id == \
        'req-s'


class _Endpoint:
    """Records the context each cast gave it."""

    target = messaging.Target(version='1.1')

    def __init__(self):
        self.contexts = []
        self.called = threading.Event()

    @messaging.expose
    def run_steps(self, ctxt, steps):
        self.contexts.append(ctxt)
        self.called.set()


def _cast_and_receive(server_serializer):
    # The global CONF: oslo.messaging registers its tracing options there
    # only, and a client reads them.
    transport = messaging.get_rpc_transport(cfg.CONF, url='fake:')
    endpoint = _Endpoint()
    target = messaging.Target(topic='library-internals', server='host-a')
    server = messaging.get_rpc_server(
        transport, target, [endpoint], executor='threading',
        serializer=server_serializer)
    server.start()
    try:
        client = messaging.get_rpc_client(
            transport, messaging.Target(topic='library-internals'),
            serializer=rpc.ContextSerializer())
        client.prepare(version='1.1').cast(
            context.StepsContext(request_id='req-s', orders={
                'o-1': values.RequestIds('req-order', 'req-global')}),
            'run_steps', steps=[['check', 'o-1', 0]])
        assert endpoint.called.wait(10)
    finally:
        server.stop()
        server.wait()
        transport.cleanup()
    return endpoint.contexts[0]


def test_a_worker_without_the_serializer_runs_the_message():
    # The previous release's worker: oslo.messaging's NoOpSerializer.
    received = _cast_and_receive(None)
    assert isinstance(received, dict)
    assert received['orders'] == ORDERS


def test_a_worker_with_the_serializer_reads_the_orders():
    received = _cast_and_receive(rpc.ContextSerializer())
    assert isinstance(received, context.StepsContext)
    assert received.request_id == 'req-s'
    assert received.ids_of('o-1') == ('req-order', 'req-global')
