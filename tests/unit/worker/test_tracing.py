"""Traces carried with an order's work (``worker.tracing``), no database
server: the order's creation keeps its span's carrier, a cast carries its
own span's per order, a worker's step joins it, and a webhook request
names its span. Spans are kept in memory here; tests/functional/
test_tracing.py sends them to a real OTLP/HTTP receiver.
"""

import datetime
import os
import pathlib
import re
import socket
import subprocess
import sys

from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.sdk.trace import export
from opentelemetry.sdk.trace.export import in_memory_span_exporter
from opentelemetry import trace
from opentelemetry.trace.propagation import tracecontext
import pytest

from tests import config
from worker import api
from worker import context
from worker.notifications import traced
from worker import rpc
from worker import rpcapi
from worker.steps import runs
from worker.steps import traces
from worker import tracing
from worker import values

NOW = datetime.datetime(2026, 11, 26, 12, 0, 0)
SERIALIZER = rpc.ContextSerializer()
PARENT = {'traceparent':
          '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'}
TRACE_ID = int('0af7651916cd43dd8448eb211c80319c', 16)
ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture
def spans(monkeypatch):
    """Tracing on, its spans kept in memory (ended spans, in order)."""
    exporter = in_memory_span_exporter.InMemorySpanExporter()
    provider = sdk_trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    monkeypatch.setattr(tracing, '_state', tracing._State(
        os.getpid(), provider, provider.get_tracer('test'),
        tracecontext.TraceContextTextMapPropagator(), trace))
    monkeypatch.setattr(tracing, 'ENABLED', True)
    yield exporter
    context.set_current(None)


def _ids(carrier):
    """``(trace id, span id)`` of a carrier's traceparent."""
    _, trace_id, span_id, _ = carrier['traceparent'].split('-')
    return int(trace_id, 16), int(span_id, 16)


def _by_name(exporter):
    return {span.name: span for span in exporter.get_finished_spans()}


def test_a_casts_traces_come_back_as_they_were_sent():
    sent = context.StepsContext(orders={}, traces={
        'o-1': PARENT, 'o-2': 'not a carrier', 3: PARENT,
        'o-4': {'traceparent': 'x' * 600}})

    wire = SERIALIZER.serialize_context(sent)
    received = SERIALIZER.deserialize_context(wire)

    # A context with traces and no request id still comes as one.
    assert wire['traces'] == {'o-1': PARENT}
    assert isinstance(received, context.StepsContext)
    assert received.trace_of('o-1') == PARENT
    assert received.trace_of('o-2') is None


def test_a_context_without_traces_sends_no_traces_key():
    wire = SERIALIZER.serialize_context(context.StepsContext(
        request_id='req-1'))
    assert 'traces' not in wire


def test_a_cast_is_a_span_of_each_orders_trace_that_its_context_carries(
        spans, client):
    steps = [values.StepRef('a', 'o-1', 0, trace=PARENT),
             values.StepRef('b', 'o-1', 0, trace=PARENT),
             values.StepRef('a', 'o-2', 0)]

    rpcapi.WorkerAPI(client).run_steps(steps)

    [cast] = spans.get_finished_spans()
    assert cast.name == 'cast'
    assert (cast.context.trace_id, cast.parent.span_id) == _ids(PARENT)
    [sent] = client.contexts
    # The cast's own span, for its order only.
    assert sent['traces'].keys() == {'o-1'}
    assert _ids(sent['traces']['o-1']) == (TRACE_ID, cast.context.span_id)


def test_with_tracing_off_a_cast_carries_no_trace(client):
    assert not tracing.ENABLED
    rpcapi.WorkerAPI(client).run_steps([values.StepRef('a', 'o-1', 0,
                                                       trace=PARENT)])
    [sent] = client.contexts
    assert 'traces' not in sent


def test_an_order_keeps_the_span_of_its_creation_and_its_casts_join_it(
        spans, database, client):
    orders = api.OrderAPI(database, config.make_conf(),
                          rpcapi.WorkerAPI(client), now=lambda: NOW)

    order = orders.create('certificate', {}, project_id='p')

    found = _by_name(spans)
    create, cast = found['order.create'], found['cast']
    assert create.attributes['barbican_retry.order_id'] == order.id
    with database.reader() as session:
        row = database.repositories.orders.get(session, order.id)
    assert _ids(row.trace_context) == (create.context.trace_id,
                                       create.context.span_id)
    assert cast.parent.span_id == create.context.span_id
    [sent] = client.contexts
    assert _ids(sent['traces'][order.id])[1] == cast.context.span_id


def test_with_tracing_off_an_order_keeps_no_trace(database, client):
    orders = api.OrderAPI(database, config.make_conf(),
                          rpcapi.WorkerAPI(client), now=lambda: NOW)
    order = orders.create('certificate', {}, project_id='p')
    with database.reader() as session:
        row = database.repositories.orders.get(session, order.id)
    assert row.trace_context is None


class _Sender:
    def __init__(self):
        self.headers = []
        self.keys = []

    def send(self, url, payload, keys=()):
        self.headers.append(tracing.inject({}))
        self.keys.append(keys)
        return None


def test_a_steps_claim_run_and_result_join_its_casts_span(spans):
    step = values.StepRef('notify:1', 'o-1', 4, trace=PARENT)
    run = runs.Run(order_id='o-1', step='notify:1', token=5, kind=None,
                   failures=0, polls=0, started_at=NOW, last_error=None,
                   order_created_at=NOW, order_meta={}, order_priority=0,
                   workflow=None, policy=None, trace={'traceparent': 'x'})
    sender = _Sender()
    webhooks = traced.TracedSender(sender)
    step_trace = traces.StepTrace(step)

    run = step_trace.claimed(run)
    step_trace.run(lambda run, view: webhooks.send(
        'https://hooks.example.org/', {'event_id': 'e-1'}, ['whsec_k']),
        run, None)
    step_trace.result(lambda item: None, (run, None))
    step_trace.end()

    found = _by_name(spans)
    whole = found['step notify:1']
    # The cast's span is the parent, not the order's creation.
    assert (whole.context.trace_id, whole.parent.span_id) == _ids(PARENT)
    assert _ids(run.trace) == (TRACE_ID, whole.context.span_id)
    for name in ('claim', 'run', 'result'):
        assert found[name].parent.span_id == whole.context.span_id
    post = found['webhook.post']
    assert post.parent.span_id == found['run'].context.span_id
    # The request named the POST's span, and was signed with the keys.
    assert _ids(sender.headers[0]) == (TRACE_ID, post.context.span_id)
    assert sender.keys == [['whsec_k']]


def test_the_steps_a_result_makes_ready_join_the_step_that_did():
    run = runs.Run(
        order_id='o-1', step='a', token=1, kind=None, failures=0, polls=0,
        started_at=NOW, last_error=None, order_created_at=NOW,
        order_meta={}, order_priority=0, workflow=None, policy=None,
        trace=PARENT)
    ready = [values.StepRef('b', 'o-1', 0), values.StepRef('c', 'o-2', 0),
             values.StepRef('d', 'o-1', 0, trace={'traceparent': 'own'})]

    joined = traces.join(ready, [(run, None)])

    assert [step.trace for step in joined] == [
        run.trace, None, {'traceparent': 'own'}]


def test_an_order_without_a_trace_records_no_span(spans):
    span = tracing.start('cast', None)
    span.end()
    assert span.carrier is None
    assert spans.get_finished_spans() == ()


def test_the_due_rows_carry_their_orders_trace_only_when_asked(
        spans, database):
    orders = api.OrderAPI(database, config.make_conf(), None,
                          now=lambda: NOW)
    # Its first step waits in a retry row.
    order = orders.create('certificate', {}, project_id='p',
                          not_before=NOW + datetime.timedelta(hours=1))
    create = _by_name(spans)['order.create']
    later = NOW + datetime.timedelta(hours=2)
    with database.reader() as session:
        [plain] = database.repositories.retry_tasks.due(session, later, 10)
        [asked] = database.repositories.retry_tasks.due(
            session, later, 10, traces=True)
    assert plain.order_id == order.id and plain.trace_context is None
    assert _ids(asked.trace_context) == (create.context.trace_id,
                                         create.context.span_id)


def test_an_unreachable_endpoint_loses_spans_and_raises_nothing():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    conf = config.make_conf(**{
        'tracing.enabled': True,
        'tracing.otlp_endpoint': 'http://127.0.0.1:%d/v1/traces' % port,
        'tracing.export_timeout_seconds': 0.5})
    try:
        assert tracing.configure(conf, 'test')
        with tracing.span('order.create') as span:
            assert span.carrier is not None
        tracing.flush(2)
    finally:
        tracing.shutdown()
    assert not tracing.ENABLED


def test_with_tracing_off_no_process_loads_opentelemetry():
    code = ('import sys\n'
            'from tests import config\n'
            'from worker import api, manager, service, tracing\n'
            'from scheduler import dispatch, service as retry_service\n'
            'assert not tracing.configure(config.make_conf())\n'
            'print(sorted(m for m in sys.modules\n'
            '             if m.startswith("opentelemetry")))\n')
    out = subprocess.run([sys.executable, '-c', code], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == '[]'


def test_only_worker_tracing_imports_opentelemetry():
    imports = re.compile(r'^\s*(import|from)\s+opentelemetry', re.M)
    offenders = [str(path.relative_to(ROOT))
                 for package in ('worker', 'scheduler')
                 for path in (ROOT / package).rglob('*.py')
                 if imports.search(path.read_text()) and
                 path != ROOT / 'worker' / 'tracing.py']
    assert offenders == []
