"""An order's life as one trace, received by a real OTLP/HTTP receiver.

Real barbican-worker processes (two, forked by the launcher: each builds
its own tracer provider), the real retry daemon, RabbitMQ and each
database; an OTLP/HTTP receiver (``tests.functional.otlp_receiver``) and
a webhook receiver (``tests.functional.receiver``) on 127.0.0.1. A
certificate order with a callback URL is created by ``order create``
(through ``worker.api``); its status check waits 2 s in a retry row,
which the retry daemon dispatches. Every span of its life is in one
trace, linked by parent, and each webhook request carried the
``traceparent`` of its ``webhook.post`` span.
"""

import re

from tests.functional import otlp_receiver
from tests.functional import processes
from tests.functional import receiver as receivers
from tests.functional import workflows
from worker.db import models

SECRET = 'a-test-secret'
#: ``order.created``, ``order.active``, ``order.end``.
EVENTS = 3
TRACEPARENT = re.compile(r'^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$')


class _TracedReceiver(receivers.Receiver):
    """A webhook receiver that keeps each request's ``traceparent``."""

    def __init__(self, secret):
        super().__init__(secret)
        self.traceparents = []

    def _handle(self, request):
        self.traceparents.append(request.headers.get('traceparent'))
        super()._handle(request)


def _options(otlp_endpoint):
    return {
        'worker': {'workers': 2},
        'scheduler': {'schedule_period_seconds': 1},
        # The status check comes 2 s after the request: a retry row.
        'simple_certificate': {'delay_before_update_seconds': 2},
        'notifications': {'allowed_hosts': '127.0.0.1', 'secret': SECRET,
                          'timeout_seconds': 2},
        'tracing': {'enabled': 'true', 'otlp_endpoint': otlp_endpoint,
                    'sample_ratio': 1.0, 'schedule_delay_seconds': 0.2},
    }


def test_an_order_is_one_trace_from_its_creation_to_its_webhooks(
        deployment, database):
    traces = otlp_receiver.OTLPReceiver().start()
    hooks = _TracedReceiver(SECRET).start()
    try:
        cluster = deployment(_options(traces.url))
        workers, retry = workflows.start(cluster, count=2)
        [order] = cluster.manage_json('order', 'create', '--type',
                                      'certificate', '--callback-url',
                                      hooks.url)
        order_id = order['id']
        workflows.wait_status(database, [order_id], models.ACTIVE, 60)
        processes.wait_for(lambda: hooks.count() == EVENTS, 30,
                           'the 3 events received')
        # Stopping exports what waits.
        assert retry.stop() == 0
        assert workers.stop() == 0
        processes.wait_for(lambda: _names(traces) >= _EXPECTED, 15,
                           'the spans of the whole life received')
    finally:
        hooks.stop()
        traces.stop()

    spans = traces.received()
    [trace_id] = {span.trace_id for span in spans}
    ids = {span.span_id for span in spans}
    [root] = [span for span in spans if not span.parent_id]
    assert (root.name, root.service) == ('order.create',
                                         'barbican-retry-manage')
    assert root.attributes['barbican_retry.order_id'] == order_id
    assert {span.parent_id for span in spans} - {''} <= ids
    assert {span.service for span in spans} == {
        'barbican-retry-manage', 'barbican-worker', 'barbican-retry'}
    by_id = {span.span_id: span for span in spans}

    # The daemon's dispatch of the retry row is the parent of its cast,
    # which is the parent of the status check on a worker.
    [dispatch] = [span for span in spans if span.name == 'retry.dispatch']
    assert dispatch.service == 'barbican-retry'
    assert dispatch.attributes['barbican_retry.step'] == \
        'check_certificate_status'
    [check] = [span for span in spans
               if span.name == 'step check_certificate_status']
    assert by_id[by_id[check.parent_id].parent_id] is dispatch
    assert by_id[check.parent_id].name == 'cast'
    # A retry row's dispatch joins the trace under the order's creation.
    assert _ancestors(by_id, dispatch)[-1] is root
    for step in [span for span in spans if span.name.startswith('step ')]:
        assert {by_id[span].name for span in ids
                if by_id[span].parent_id == step.span_id} >= {
            'claim', 'run', 'result'}, step.name

    # Each webhook request: its traceparent names a webhook.post span of
    # the trace, child of a delivery's run.
    posts = {span.span_id: span for span in spans
             if span.name == 'webhook.post'}
    assert len(hooks.traceparents) >= EVENTS
    for header in hooks.traceparents:
        match = TRACEPARENT.match(header or '')
        assert match, header
        assert match.group(1) == trace_id
        assert int(match.group(3), 16) & 1, 'not sampled: %s' % header
        post = posts[match.group(2)]
        run = by_id[post.parent_id]
        assert run.name == 'run'
        assert by_id[run.parent_id].name.startswith(
            'step ' + models.DELIVERY_PREFIX)


def test_an_endpoint_that_does_not_answer_fails_no_step(deployment,
                                                        database):
    """Spans that cannot be sent are logged as lost; the order runs as it
    would without tracing, its retry row included."""
    closed = 'http://127.0.0.1:%d/v1/traces' % processes.free_port()
    options = _options(closed)
    # Each process retries an export until this timeout, at most, when it
    # stops: what "order create" and a stop wait for a lost endpoint.
    options['tracing']['export_timeout_seconds'] = 1
    cluster = deployment(options)
    workers, retry = workflows.start(cluster, count=2)
    [order] = cluster.manage_json('order', 'create', '--type',
                                  'certificate')
    workflows.wait_status(database, [order['id']], models.ACTIVE, 60)
    assert retry.stop() == 0
    assert workers.stop() == 0
    for daemon in (workers, retry):
        assert 'Failed to export spans batch' in daemon.log(), \
            daemon.script


_EXPECTED = {'order.create', 'cast', 'step process_type_order', 'claim',
             'run', 'result', 'retry.dispatch',
             'step check_certificate_status', 'webhook.post'}


def _names(traces):
    return {span.name for span in traces.received()}


def _ancestors(by_id, span):
    found = []
    while span.parent_id:
        span = by_id[span.parent_id]
        found.append(span)
    return found
