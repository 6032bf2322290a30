"""Traces of orders: the only module that speaks to OpenTelemetry.

With ``[tracing] enabled = true`` (``worker.conf.tracing``), an order's life
is one trace: its creation (``worker.api``), every cast of its steps
(``worker.rpcapi``), each step's claim, run and result on a worker
(``worker.manager``), the retry daemon's dispatch of its retry rows
(``scheduler.dispatch``) and each webhook POST
(``worker.notifications.traced``). The rest of the code calls this module
and never imports ``opentelemetry``.

Why OpenTelemetry's SDK and not osprofiler's OTLP driver: what is asked
is W3C ``traceparent`` propagation (to the RPC messages, the order's row
and the webhook requests, so that a receiver's own tracer joins the
trace), a parent-based ratio sampler and a batching OTLP/HTTP exporter.
The SDK has the three as they are specified (``TraceContextTextMapPropagator``,
``ParentBased(TraceIdRatioBased)``, ``BatchSpanProcessor`` with the
OTLP/HTTP exporter); osprofiler carries its own HMAC-signed trace info
(``X-Trace-Info``/``X-Trace-HMAC``) instead of W3C, needs a shared HMAC
key on every side, and samples all or nothing.

The context of a trace is carried as a *carrier*: the W3C headers of a
span, ``{"traceparent": "00-<trace id>-<span id>-<flags>"}`` (with
``"tracestate"`` when there is one). That is what ``orders.trace_context``
keeps (the span of the order's creation), what a cast of steps carries per
order (``worker.context.StepsContext.traces``: the span of the cast) and
what a webhook request's headers get.

Off (the default), nothing of OpenTelemetry is imported and no provider
exists: callers on a hot path check the module flag ``ENABLED`` first, and
carriers are None everywhere. Exporting never blocks or fails a step: the
spans wait in the ``BatchSpanProcessor``'s bounded queue and are POSTed
by its thread; an endpoint that does not answer is logged by the
exporter, and the spans beyond the queue are dropped.

A provider belongs to one process: ``configure`` is called in each
process's ``start()`` (after the launcher forked), and builds a new one
when it finds itself in another process than the one that built the
last.
"""

import collections.abc as abc
import contextlib
import os
import sys
import threading
import time
import typing

from oslo_log import log as logging

from worker import values

LOG = logging.getLogger(__name__)

#: True once ``configure`` built this process's provider: the one check a
#: hot path makes.
ENABLED = False

#: A trace's context as W3C headers (``traceparent``, ``tracestate``).
Carrier = values.Carrier

#: The keys a carrier may have.
_KEYS = ('traceparent', 'tracestate')
#: The longest value kept of a carrier received (a traceparent is 55
#: characters; W3C bounds a tracestate at 512).
_MAX_VALUE = 512

_lock = threading.Lock()
_state: typing.Any = None


class _State(typing.NamedTuple):
    """This process's provider, tracer and propagator."""

    pid: int
    provider: typing.Any
    tracer: typing.Any
    propagator: typing.Any
    trace: typing.Any


def configure(conf: typing.Any, name: str | None = None) -> bool:
    """Build this process's tracer provider if ``[tracing] enabled``.

    Call it where a process builds its parts (a service's ``start()``,
    after the fork); again in the same process, it does nothing.

    :param name: the service name when ``[tracing] service_name`` is not
        set; by default the program's.
    :returns: ``ENABLED``.
    """
    global ENABLED, _state
    group = conf.tracing
    if not group.enabled:
        return False
    with _lock:
        if _state is not None and _state.pid == os.getpid():
            return True
        _state = _build(group, group.service_name or name or _program())
        ENABLED = True
    LOG.info('Tracing: spans of %s exported to %s (sample ratio %g)',
             _state.provider.resource.attributes.get('service.name'),
             group.otlp_endpoint, group.sample_ratio)
    return True


def _build(group: typing.Any, service_name: str) -> _State:
    """The provider of ``group``'s options: ratio sampling, batching
    OTLP/HTTP exporter."""
    # Imported here only: with tracing off, no process loads the SDK.
    from opentelemetry.exporter.otlp.proto.http import trace_exporter
    from opentelemetry.sdk import resources
    from opentelemetry.sdk import trace as sdk_trace
    from opentelemetry.sdk.trace import export
    from opentelemetry.sdk.trace import sampling
    from opentelemetry import trace
    from opentelemetry.trace.propagation import tracecontext

    provider = sdk_trace.TracerProvider(
        resource=resources.Resource.create(
            {'service.name': service_name}),
        sampler=sampling.ParentBased(
            sampling.TraceIdRatioBased(group.sample_ratio)))
    exporter = trace_exporter.OTLPSpanExporter(
        endpoint=group.otlp_endpoint,
        timeout=group.export_timeout_seconds)
    provider.add_span_processor(export.BatchSpanProcessor(
        exporter, max_queue_size=group.max_queue_size,
        schedule_delay_millis=group.schedule_delay_seconds * 1000,
        max_export_batch_size=group.max_export_batch_size,
        export_timeout_millis=group.export_timeout_seconds * 1000))
    return _State(os.getpid(), provider,
                  provider.get_tracer('barbican-retry'),
                  tracecontext.TraceContextTextMapPropagator(), trace)


def _program() -> str:
    return os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] \
        else 'barbican-retry'


def flush(timeout_seconds: float = 5.0) -> None:
    """Export the spans waiting, for at most ``timeout_seconds`` (a
    command about to exit, a service stopping)."""
    state = _state
    if ENABLED and state is not None and state.pid == os.getpid():
        state.provider.force_flush(int(timeout_seconds * 1000))


def shutdown() -> None:
    """Export what waits and stop this process's provider; tracing is off
    until ``configure`` is called again."""
    global ENABLED, _state
    with _lock:
        state, _state, ENABLED = _state, None, False
    if state is not None and state.pid == os.getpid():
        state.provider.shutdown()


class Span:
    """One span being recorded, or nothing (tracing off, no parent).

    ``carrier`` is the W3C context that makes a child of it elsewhere
    (None when nothing is recorded and nothing is to be propagated).
    """

    __slots__ = ('_span',)

    def __init__(self, span: typing.Any = None) -> None:
        self._span = span

    @property
    def carrier(self) -> Carrier | None:
        """The span's ``traceparent`` (and ``tracestate``), or None."""
        if self._span is None:
            return None
        return _carrier_of(self._span)

    def set(self, key: str, value: typing.Any) -> None:
        """Set an attribute of the span (a string, number or bool)."""
        if self._span is not None and value is not None:
            self._span.set_attribute(key, value)

    def fail(self, description: str) -> None:
        """Mark the span as failed, with why."""
        state = _state
        if self._span is not None and state is not None:
            self._span.set_status(state.trace.StatusCode.ERROR,
                                  description)

    def end(self, end_ns: int | None = None) -> None:
        """End the span (at ``end_ns``, a ``time.time_ns()``, or now)."""
        if self._span is not None:
            self._span.end(end_time=end_ns)

    @contextlib.contextmanager
    def current(self) -> abc.Iterator[None]:
        """Make the span this thread's current one for the block (a
        webhook POST inside it is its child); it is not ended."""
        state = _state
        if self._span is None or state is None:
            yield
            return
        with state.trace.use_span(self._span, end_on_exit=False,
                                  record_exception=False,
                                  set_status_on_exception=False):
            yield


#: The span of nothing: tracing off, or no trace to join.
NO_SPAN = Span()


def start(name: str, parent: Carrier | None,
          start_ns: int | None = None,
          attributes: abc.Mapping[str, typing.Any] | None = None) -> Span:
    """Start a span that joins the trace of ``parent`` (a carrier).

    Work done for an order (a cast, a step, a dispatch) joins its order's
    trace or none: without a ``parent`` (an order created while tracing
    was off), nothing is recorded, rather than a new trace per step.

    :param start_ns: when it started (``time.time_ns()``), for a span
        recorded after the fact (a step's claim, timed before its order's
        trace was known); now if None.
    """
    state = _state
    if not ENABLED or parent is None or state is None:
        return NO_SPAN
    context = state.propagator.extract(parent)
    return Span(state.tracer.start_span(
        name, context=context, start_time=start_ns,
        attributes=_attributes(attributes)))


@contextlib.contextmanager
def span(name: str,
         attributes: abc.Mapping[str, typing.Any] | None = None
         ) -> abc.Iterator[Span]:
    """A span, child of this thread's current one (a new trace, sampled
    by ``[tracing] sample_ratio``, if there is none), current for the
    block. An exception raised in it marks it failed and goes on.

    For the start of an order's trace (its creation) and a webhook POST.
    """
    state = _state
    if not ENABLED or state is None:
        yield NO_SPAN
        return
    with state.tracer.start_as_current_span(
            name, attributes=_attributes(attributes)) as started:
        yield Span(started)


def current() -> Carrier | None:
    """The carrier of this thread's current span, or None (none, or
    tracing off): what an order keeps of its creation."""
    state = _state
    if not ENABLED or state is None:
        return None
    return _carrier_of(state.trace.get_current_span())


def inject(headers: dict[str, str]) -> dict[str, str]:
    """Add this thread's current span's ``traceparent`` (and
    ``tracestate``) to ``headers`` (a webhook request's); returns them.
    Nothing when tracing is off or no span is current."""
    if ENABLED:
        carrier = current()
        if carrier:
            headers.update(carrier)
    return headers


def _carrier_of(span: typing.Any) -> Carrier | None:
    state = _state
    if state is None or not span.get_span_context().is_valid:
        return None
    carrier: Carrier = {}
    state.propagator.inject(carrier,
                            context=state.trace.set_span_in_context(span))
    return carrier or None


def carrier(value: typing.Any) -> Carrier | None:
    """``value`` as a carrier if it is one (a mapping with a string
    ``traceparent``, string values of bounded length), else None: what a
    message or a row holds is checked before it is trusted."""
    if not isinstance(value, abc.Mapping):
        return None
    found = {key: value[key] for key in _KEYS
             if isinstance(value.get(key), str) and
             len(value[key]) <= _MAX_VALUE}
    return found if 'traceparent' in found else None


def now_ns() -> int:
    """The time a span records (``time.time_ns()``)."""
    return time.time_ns()


def _attributes(values: abc.Mapping[str, typing.Any] | None
                ) -> dict[str, typing.Any] | None:
    if not values:
        return None
    return {key: value for key, value in values.items()
            if value is not None}
