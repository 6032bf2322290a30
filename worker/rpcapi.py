"""Client side of the worker's RPC interface.

This is the only worker module the retry scheduler and the operator
commands use to reach the workers. ``RETRYABLE_METHODS`` declares, in one
place, which methods a retry row may name.
"""

import collections.abc
import functools
import inspect
import json
import typing

import oslo_messaging as messaging

from worker import rpc

RETRYABLE_METHODS = frozenset({
    'process_type_order',
    'check_certificate_status',
})


# The version each cast needs (see worker.rpc.RPC_API_VERSION). run_steps
# came with 1.1: workers are upgraded before the retry daemons
# (doc/install.md).
_BASE_VERSION = '1.0'
RUN_STEPS_VERSION = '1.1'


class InvalidRetry(ValueError):
    """A retry row that can never be cast; the message says why."""


class Step(typing.NamedTuple):
    """One step of an order, as a retry row names it and a worker runs it."""

    method: str
    order_id: str
    generation: int


class Client(typing.Protocol):
    """What ``WorkerAPI`` uses of an ``oslo_messaging.RPCClient``."""

    def cast(self, ctxt: dict[str, typing.Any], method: str,
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
        # A cast is stamped with the version it needs, so that a single
        # step still reaches a 1.0 worker; run_steps prepares its own.
        target = messaging.Target(topic=topic, version=_BASE_VERSION)
        return cls(messaging.get_rpc_client(transport, target, retry=retry))

    def _cast(self, method: str, **kwargs: typing.Any) -> None:
        self._client.cast({}, method, **kwargs)

    def process_type_order(self, order_id: str, generation: int) -> None:
        """Start processing a PENDING order."""
        self._cast('process_type_order', order_id=order_id,
                   generation=generation)

    def check_certificate_status(self, order_id: str,
                                 generation: int) -> None:
        """Check whether the certificate of an order has been issued."""
        self._cast('check_certificate_status', order_id=order_id,
                   generation=generation)

    def run_steps(self, steps: collections.abc.Iterable[Step]) -> None:
        """Cast several steps (``Step``) in one message.

        The worker drops the stale ones with one read and runs the others
        concurrently, each as a message of its own would; one message
        instead of one per step is what lets a backlog drain faster than
        the broker confirms messages.
        """
        self._client.prepare(version=RUN_STEPS_VERSION).cast(
            {}, 'run_steps', steps=[list(step) for step in steps])

    def parse_retry(self, retry_task: str, retry_args: str,
                    retry_kwargs: str) -> Step:
        """Validate a retry row; return the ``Step`` it names.

        :param retry_args: the row's JSON text of a list.
        :param retry_kwargs: the row's JSON text of an object.
        :raises InvalidRetry: the row can never be cast.
        """
        if retry_task not in RETRYABLE_METHODS:
            raise InvalidRetry('method %r is not retryable' % retry_task)
        args = _decode(retry_args, list, 'retry_args')
        kwargs = _decode(retry_kwargs, dict, 'retry_kwargs')
        try:
            bound = _signature(retry_task).bind(*args, **kwargs)
        except TypeError as exc:
            raise InvalidRetry('arguments do not fit %s: %s'
                               % (retry_task, exc))
        try:
            step = Step(retry_task, **bound.arguments)
        except TypeError as exc:
            raise InvalidRetry('%s does not take a step\'s arguments: %s'
                               % (retry_task, exc))
        if not (isinstance(step.order_id, str) and
                rpc.is_generation(step.generation)):
            raise InvalidRetry('arguments of %s have the wrong types: %r'
                               % (retry_task, bound.arguments))
        return step


_T = typing.TypeVar('_T')


@functools.lru_cache(maxsize=None)
def _signature(method_name: str) -> inspect.Signature:
    # Read once per method (it cost more than a cast's SQL, per row), from
    # the class: the parameters after ``self``.
    parameters = inspect.signature(getattr(WorkerAPI, method_name)).parameters
    return inspect.Signature(list(parameters.values())[1:])


def _decode(text: str, expected_type: type[_T], column: str) -> _T:
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise InvalidRetry('%s is not valid JSON: %s' % (column, exc))
    if not isinstance(value, expected_type):
        raise InvalidRetry('%s is a JSON %s, expected %s'
                           % (column, type(value).__name__,
                              expected_type.__name__))
    return value
