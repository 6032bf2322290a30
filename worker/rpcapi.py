"""Client side of the worker's RPC interface.

This is the only worker module the retry scheduler and the operator
commands use to reach the workers. Which steps exist is declared by the
order types alone (``worker.order_types``): a retry row names a step of
its order, and the retry scheduler checks that the order has that step.

Which topic a step goes to is decided here too (``Topics``): its order
type's (``[order_type:T] topic``), served by the workers started with
``barbican-worker --topic T``, so that a slow type has step threads of
its own and cannot hold those of the others.
"""

import collections.abc
import inspect
import json
import threading
import typing

from oslo_context import context as oslo_context
import oslo_messaging as messaging

from worker.conf import order_types as type_conf
from worker import context as context_module
from worker.db import models
from worker import rpc
from worker import tracing
from worker import values

# The version each cast needs (see worker.rpc.RPC_API_VERSION). run_steps
# came with 1.1: workers are upgraded before the retry daemons
# (doc/install.md).
_BASE_VERSION = '1.0'
RUN_STEPS_VERSION = '1.1'
#: The most steps one ``run_steps`` message carries (the bound of
#: ``[scheduler] rows_per_cast``); workers drop a message with more.
MAX_STEPS_PER_MESSAGE = 500


class InvalidRetry(ValueError):
    """A retry row that can never be cast; the message says why."""


#: Deprecated alias of ``worker.values.StepRef``, kept for one release
#: for the code that still names it here.
Step = values.StepRef


class Client(typing.Protocol):
    """What ``WorkerAPI`` uses of an ``oslo_messaging.RPCClient``."""

    def cast(self, ctxt: typing.Any, method: str,
             **kwargs: typing.Any) -> None:
        """Send ``method`` with ``kwargs``; do not wait for an answer."""
        ...

    def prepare(self, *, version: str) -> 'Client':
        """The same client, stamping its messages with ``version``."""
        ...


class Topics:
    """The topic each step is cast to, and one client per topic.

    A step of a workflow goes to its order type's topic
    (``worker.conf.order_types.topic``: ``[order_type:T] topic``, by
    default ``[worker] topic``). A delivery (``notify:*``) goes to
    ``[worker] topic`` whatever its order's type: it is a notification
    POST, not the type's slow work, and must not wait behind it. So does
    a step whose type is not installed in this process, or not known
    (``Step.order_type`` None).

    ``[order_type:T] topic`` is not mutable: a process reads each type's
    once. The clients are built at their first cast and kept.

    :param client_of: builds the client of a topic, ``client_of(topic)``.
    """

    def __init__(self, conf: typing.Any,
                 client_of: collections.abc.Callable[[str], Client]
                 ) -> None:
        self._conf = conf
        self._client_of = client_of
        self._of_type: dict[str, str | None] = {}
        self._clients: dict[str, Client] = {}
        self._lock = threading.Lock()

    def of(self, step: values.StepRef) -> str | None:
        """The topic of ``step``; None for ``[worker] topic``."""
        if step.order_type is None or models.is_delivery(step.step):
            return None
        try:
            return self._of_type[step.order_type]
        except KeyError:
            topic = type_conf.topic(self._conf, step.order_type)
            found = None if topic == self._conf.worker.topic else topic
            self._of_type[step.order_type] = found
            return found

    def client(self, topic: str) -> Client:
        """The client of ``topic``, built at its first use."""
        with self._lock:
            client = self._clients.get(topic)
            if client is None:
                client = self._clients[topic] = self._client_of(topic)
            return client


class WorkerAPI:
    """Casts orders' steps to the worker pool.

    Every step carries the order's ``generation``: the fencing token the
    worker checks before it acts (see ``worker.db.models.Order``).

    :param client: an ``oslo_messaging.RPCClient`` on ``[worker] topic``,
        or a fake with the same ``cast(ctxt, method, **kwargs)``.
    :param topics: the ``Topics`` that send the steps of some order types
        elsewhere; None casts every step with ``client``.
    """

    def __init__(self, client: Client, topics: Topics | None = None
                 ) -> None:
        self._client = client
        self._topics = topics

    @classmethod
    def from_transport(cls, transport: typing.Any, topic: str,
                       retry: int = 1) -> typing.Self:
        """Build the client of ``topic`` on ``transport``: every step is
        cast to ``topic``.

        :param retry: reconnection attempts of one cast (oslo.messaging's
            ``retry``; -1 retries forever, which a scheduler must not do).
        """
        return cls(_client(transport, topic, retry))

    @classmethod
    def from_conf(cls, conf: typing.Any, transport: typing.Any,
                  retry: int = 1) -> typing.Self:
        """Build the client of a deployment on ``transport``: each step to
        its order type's topic (``Topics``), ``[worker] topic`` by
        default.

        :param retry: as ``from_transport``'s.
        """
        def client_of(topic: str) -> Client:
            return _client(transport, topic, retry)

        return cls(client_of(conf.worker.topic), Topics(conf, client_of))

    def topic(self, step: values.StepRef) -> str | None:
        """The topic ``step`` is cast to; None for the default one (that
        of the ``client`` given)."""
        return None if self._topics is None else self._topics.of(step)

    def run_steps(self, steps: collections.abc.Iterable[values.StepRef],
                  context: oslo_context.RequestContext | None = None
                  ) -> None:
        """Cast several steps (``StepRef``): one message per topic.

        The worker drops the stale ones with one read and runs the others
        concurrently, each as a message of its own would; one message
        instead of one per step is what lets a backlog drain faster than
        the broker confirms messages.

        Every topic's message is tried; if one fails, the first error is
        raised after the others went out.

        :param context: the sender's request (its ids are the message's),
            or None. The request ids of the steps' orders
            (``StepRef.request``) go beside them (``steps_context``).
        """
        by_topic: dict[str | None, list[values.StepRef]] = {}
        for step in steps:
            by_topic.setdefault(self.topic(step), []).append(step)
        error = None
        for topic, group in by_topic.items():
            client = (self._client if topic is None or self._topics is None
                      else self._topics.client(topic))
            spans = _cast_spans(group, topic) if tracing.ENABLED else {}
            try:
                client.prepare(version=RUN_STEPS_VERSION).cast(
                    steps_context(group, context, spans), 'run_steps',
                    steps=[step.wire() for step in group])
            except Exception as exc:
                error = error or exc
                for span in spans.values():
                    span.fail(str(exc))
            for span in spans.values():
                span.end()
        if error is not None:
            raise error

    def parse_retry(self, retry_task: str, retry_args: str,
                    retry_kwargs: str) -> values.StepRef:
        """Validate a retry row; return the ``StepRef`` it names
        (``parse_retry``)."""
        return parse_retry(retry_task, retry_args, retry_kwargs)


def parse_retry(retry_task: str, retry_args: str,
                retry_kwargs: str) -> values.StepRef:
    """Validate a retry row; return the ``StepRef`` it names.

    :param retry_task: the step's name.
    :param retry_args: the row's JSON text of a list.
    :param retry_kwargs: the row's JSON text of an object.
    :raises InvalidRetry: the row can never be cast.
    """
    args = _decode(retry_args, list, 'retry_args')
    kwargs = _decode(retry_kwargs, dict, 'retry_kwargs')
    try:
        bound = _STEP_ARGUMENTS.bind(*args, **kwargs)
    except TypeError as exc:
        raise InvalidRetry('arguments do not fit a step: %s' % exc)
    found = bound.arguments
    ids = (found.get('request_id'), found.get('global_request_id'))
    if not (isinstance(found['order_id'], str) and
            rpc.is_generation(found['generation']) and
            all(value is None or isinstance(value, str)
                for value in ids)):
        raise InvalidRetry('arguments of %s have the wrong types: %r'
                           % (retry_task, found))
    return values.StepRef(retry_task, found['order_id'],
                          found['generation'],
                          values.RequestIds(*ids) if any(ids) else None)


def woken_steps(rows: collections.abc.Iterable[typing.Any],
                taken: collections.abc.Collection[tuple[str, str]]
                ) -> list[values.StepRef]:
    """The steps of waiting retry rows (``retry_tasks.DueTask``) that a
    wake deleted (``taken``: their ``(order_id, step)``), to cast to
    their types' topics (``Topics``).

    A row that is not valid is left out: written by a claim
    (``worker.steps.flow.park``), it always is; one that is not would be
    parked by the retry daemon, and is now gone: its step is dispatched,
    and the recovery casts it again after its deadline.
    """
    woken = []
    for row in rows:
        if (row.order_id, row.retry_task) in taken:
            try:
                woken.append(parse_retry(
                    row.retry_task, row.retry_args, row.retry_kwargs
                )._replace(order_type=row.order_type))
            except InvalidRetry:
                continue
    return woken


def steps_context(steps: collections.abc.Iterable[values.StepRef],
                  context: oslo_context.RequestContext | None = None,
                  spans: collections.abc.Mapping[str, tracing.Span] | None
                  = None
                  ) -> context_module.StepsContext | dict[str, typing.Any]:
    """The context of a cast of ``steps``: the sender's ids
    (``context``'s), the request ids of the steps' orders, and the trace
    carriers of the cast's ``spans`` (``{order_id: tracing.Span}``).

    Without a sender, a plain dict of the orders' ids, ``{}`` when they
    have none: no request id is made up for a cast (a uuid4 and a context
    per message, for nobody to grep), and a message of orders without ids
    carries nothing more than before.
    """
    orders = {step.order_id: step.request for step in steps
              if step.request is not None}
    traces = {}
    for order_id, span in (spans or {}).items():
        carrier = span.carrier
        if carrier is not None:
            traces[order_id] = carrier
    if context is None:
        carried: dict[str, typing.Any] = {context_module.ORDERS: {
            order_id: list(ids) for order_id, ids in orders.items()}} \
            if orders else {}
        if traces:
            carried[context_module.TRACES] = traces
        return carried
    return context_module.StepsContext(
        request_id=context.request_id,
        global_request_id=context.global_request_id, orders=orders,
        traces=traces)


def _cast_spans(steps: collections.abc.Iterable[values.StepRef],
                topic: str | None
                ) -> dict[str, tracing.Span]:
    """``{order_id: span}``: one ``cast`` span per order of ``steps``
    that has a trace, child of its steps' ``trace``, not ended."""
    spans = {}
    for step in steps:
        if step.trace is not None and step.order_id not in spans:
            spans[step.order_id] = tracing.start(
                'cast', step.trace, attributes={
                    'barbican_retry.order_id': step.order_id,
                    'barbican_retry.step': step.step,
                    'messaging.destination.name': topic or 'default'})
    return spans


def retry_arguments(step: values.StepRef
                    ) -> tuple[list[str], dict[str, int | str]]:
    """The ``(args, kwargs)`` of the retry row that casts ``step`` again;
    ``WorkerAPI.parse_retry`` reads them back.

    ``kwargs`` is ``{"generation": token}``, with the order's
    ``request_id`` and ``global_request_id`` when it has them: the retry
    daemon's cast carries them without reading the order.
    """
    kwargs: dict[str, int | str] = {'generation': step.generation}
    if step.request is not None:
        for key, value in step.request._asdict().items():
            if value is not None:
                kwargs[key] = value
    return [step.order_id], kwargs


def _client(transport: typing.Any, topic: str, retry: int) -> Client:
    """The RPC client of ``topic`` on ``transport``."""
    # Every cast is run_steps, which prepares its own version (1.1); the
    # target's is the lowest this client speaks.
    target = messaging.Target(topic=topic, version=_BASE_VERSION)
    return typing.cast(Client, messaging.get_rpc_client(
        transport, target, retry=retry, serializer=rpc.ContextSerializer()))


# What a retry row's arguments must bind to: ``[order_id]`` and
# ``{"generation": token}``, and the request ids if the row has them
# (rows written before they were added have none), as ``retry_arguments``
# writes them.
_STEP_ARGUMENTS = inspect.Signature([
    inspect.Parameter('order_id', inspect.Parameter.POSITIONAL_OR_KEYWORD),
    inspect.Parameter('generation', inspect.Parameter.POSITIONAL_OR_KEYWORD),
    inspect.Parameter('request_id', inspect.Parameter.KEYWORD_ONLY,
                      default=None),
    inspect.Parameter('global_request_id', inspect.Parameter.KEYWORD_ONLY,
                      default=None),
])


_T = typing.TypeVar('_T')


def _decode(text: str, expected_type: type[_T], column: str) -> _T:
    try:
        value = json.loads(text)
    except (TypeError, ValueError, RecursionError) as exc:
        # RecursionError: JSON nested deeper than the decoder goes.
        raise InvalidRetry('%s is not valid JSON: %s' % (column, exc))
    if not isinstance(value, expected_type):
        raise InvalidRetry('%s is a JSON %s, expected %s'
                           % (column, type(value).__name__,
                              expected_type.__name__))
    return value
