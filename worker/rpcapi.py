"""Client side of the worker's RPC interface.

This is the only worker module the retry scheduler and the operator
commands use to reach the workers. Which steps exist is declared by the
order types alone (``worker.order_types``): a retry row names a step of
its order, and the retry scheduler checks that the order has that step.
"""

import collections.abc
import inspect
import json
import typing

from oslo_context import context as oslo_context
import oslo_messaging as messaging

from worker import context as context_module
from worker import rpc

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


class Step(typing.NamedTuple):
    """One step of an order, as a retry row names it and a worker runs it.

    ``generation`` is the step's fencing token at the time of the cast.
    ``request`` holds the request ids of its order, which its cast
    carries in its context (``worker.context``), not in the step: on the
    wire a step is ``[step, order_id, generation]`` (``wire``).
    """

    step: str
    order_id: str
    generation: int
    request: context_module.RequestIds | None = None

    def wire(self) -> list[typing.Any]:
        """The step as a message carries it."""
        return [self.step, self.order_id, self.generation]


class Client(typing.Protocol):
    """What ``WorkerAPI`` uses of an ``oslo_messaging.RPCClient``."""

    def cast(self, ctxt: typing.Any, method: str,
             **kwargs: typing.Any) -> None:
        """Send ``method`` with ``kwargs``; do not wait for an answer."""
        ...

    def prepare(self, *, version: str) -> 'Client':
        """The same client, stamping its messages with ``version``."""
        ...


class WorkerAPI:
    """Casts orders' steps to the worker pool.

    Every step carries the order's ``generation``: the fencing token the
    worker checks before it acts (see ``worker.db.models.Order``).

    :param client: an ``oslo_messaging.RPCClient`` on the worker topic, or
        a fake with the same ``cast(ctxt, method, **kwargs)``.
    """

    def __init__(self, client: Client) -> None:
        self._client = client

    @classmethod
    def from_transport(cls, transport: typing.Any, topic: str,
                       retry: int = 1) -> typing.Self:
        """Build the client of ``topic`` on ``transport``.

        :param retry: reconnection attempts of one cast (oslo.messaging's
            ``retry``; -1 retries forever, which a scheduler must not do).
        """
        # Every cast is run_steps, which prepares its own version (1.1); the
        # target's is the lowest this client speaks.
        target = messaging.Target(topic=topic, version=_BASE_VERSION)
        return cls(messaging.get_rpc_client(
            transport, target, retry=retry,
            serializer=rpc.ContextSerializer()))

    def run_steps(self, steps: collections.abc.Iterable[Step],
                  context: oslo_context.RequestContext | None = None
                  ) -> None:
        """Cast several steps (``Step``) in one message.

        The worker drops the stale ones with one read and runs the others
        concurrently, each as a message of its own would; one message
        instead of one per step is what lets a backlog drain faster than
        the broker confirms messages.

        :param context: the sender's request (its ids are the message's),
            or None. The request ids of the steps' orders
            (``Step.request``) go beside them (``steps_context``).
        """
        steps = list(steps)
        self._client.prepare(version=RUN_STEPS_VERSION).cast(
            steps_context(steps, context), 'run_steps',
            steps=[step.wire() for step in steps])

    def parse_retry(self, retry_task: str, retry_args: str,
                    retry_kwargs: str) -> Step:
        """Validate a retry row; return the ``Step`` it names
        (``parse_retry``)."""
        return parse_retry(retry_task, retry_args, retry_kwargs)


def parse_retry(retry_task: str, retry_args: str,
                retry_kwargs: str) -> Step:
    """Validate a retry row; return the ``Step`` it names.

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
    return Step(retry_task, found['order_id'], found['generation'],
                context_module.RequestIds(*ids) if any(ids) else None)


def steps_context(steps: collections.abc.Iterable[Step],
                  context: oslo_context.RequestContext | None = None
                  ) -> context_module.StepsContext | dict[str, typing.Any]:
    """The context of a cast of ``steps``: the sender's ids
    (``context``'s), and the request ids of the steps' orders.

    Without a sender, a plain dict of the orders' ids, ``{}`` when they
    have none: no request id is made up for a cast (a uuid4 and a context
    per message, for nobody to grep), and a message of orders without ids
    carries nothing more than before.
    """
    orders = {step.order_id: step.request for step in steps
              if step.request is not None}
    if context is None:
        return {context_module.ORDERS: {
            order_id: list(ids) for order_id, ids in orders.items()}} \
            if orders else {}
    return context_module.StepsContext(
        request_id=context.request_id,
        global_request_id=context.global_request_id, orders=orders)


def retry_arguments(step: Step) -> tuple[list[str], dict[str, int | str]]:
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
