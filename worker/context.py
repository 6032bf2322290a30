"""Request ids: the ones an order was created under, carried with its work.

An order keeps the ``request_id`` and ``global_request_id`` of the request
that created it (``worker.db.models.Order``). Every cast that concerns the
order carries them, and every log line about the order writes them where
oslo.log writes a request's ids (``[<global_request_id> <request_id>
...]`` of ``logging_context_format_string``), so that an operator follows
one order from the API through the workers and the retry daemon with one
grep.

A cast of steps carries many orders' (the retry daemon puts up to
``rows_per_cast`` steps of as many orders in one message): its context,
``StepsContext``, is the sender's own, with the ids of each order of its
steps beside them (``orders``). The steps themselves stay
``[step, order_id, generation]`` on the wire, and a worker of the
previous release, which ignores the context, still runs them.
"""

import collections.abc as abc
import contextlib
import functools
import typing

from oslo_context import context as oslo_context
from oslo_log import log as logging

from worker import tracing
from worker import values

LOG = logging.getLogger(__name__)

Context = oslo_context.RequestContext


#: The request ids an order was created under (``worker.values``).
RequestIds = values.RequestIds
#: The request ids of an order row, or None (``worker.values``).
of_order = values.request_ids_of


def for_ids(ids: RequestIds | None) -> Context | None:
    """A context that logs with ``ids``; None if they have no request id.

    oslo.log writes a context's ids only when it has a ``request_id``; a
    context would make one up for an order created without any.
    """
    if ids is None or not ids.request_id:
        return None
    return _for_ids(ids)


# A step's context is wanted by its thread and by the thread that writes
# its result: one per order, shared (a context is only read; 2.6 us to
# build one, 0.3 us to find it here). The size: more orders than a
# process has steps in flight.
@functools.lru_cache(maxsize=1024)
def _for_ids(ids: RequestIds) -> Context:
    return _detached(_OrderContext, request_id=ids.request_id,
                     global_request_id=ids.global_request_id)


class _OrderContext(Context):
    """An order's context: built once per order and never changed, so its
    logging values are computed once.

    oslo.log asks a record's context for them twice per line written
    (11 us of the 14 us a context adds to a line); every step writes a
    line about its result.
    """

    @functools.cached_property
    def _logging_values(self) -> dict[str, typing.Any]:
        return super().get_logging_values()

    def get_logging_values(self) -> dict[str, typing.Any]:
        """oslo.context's values, computed at the first line."""
        return dict(self._logging_values)


_C = typing.TypeVar('_C', bound=Context)


def _detached(factory: abc.Callable[..., _C], *args: typing.Any,
              **kwargs: typing.Any) -> _C:
    """A context built by ``factory``, not made the thread's current one.

    A RequestContext makes itself current when it is built, and
    ``overwrite=False`` still does when the thread has none: a context
    built for a log line or a cast must not become the thread's.
    """
    before = oslo_context.get_current()
    made = factory(*args, overwrite=False, **kwargs)
    if before is None:
        _set_current(None)
    return made


def new_request() -> Context:
    """A context of a new request (a new ``request_id``), not made the
    thread's current one."""
    return _detached(Context)


@contextlib.contextmanager
def current(context: Context | None) -> abc.Iterator[None]:
    """Make ``context`` this thread's current one (none, if None) for the
    block; the thread's context before is current again after it."""
    before = oslo_context.get_current()
    _set_current(context)
    try:
        yield
    finally:
        _set_current(before)


def set_current(context: Context | None) -> None:
    """Make ``context`` this thread's current one (none, if None)."""
    _set_current(context)


def _set_current(context: Context | None) -> None:
    if context is not None:
        context.update_store()
        return
    # NOTE: oslo.context has no public way to clear a thread's context;
    # its own fixture (oslo_context.fixture.ClearRequestContext) deletes
    # the attribute, as here. tests/unit/worker/
    # test_context_library_internals.py holds it to that.
    try:
        del oslo_context._request_store.context
    except AttributeError:
        pass


#: The key of a cast's context that holds its orders' request ids.
ORDERS = 'orders'
#: The key of a cast's context that holds its orders' trace carriers
#: (``worker.tracing``), present only when there are some.
TRACES = 'traces'


class StepsContext(oslo_context.RequestContext):
    """The context of one cast of steps.

    Its own ids are the sender's; ``orders`` holds ``{order_id:
    RequestIds}`` of the orders of its steps that have any. On the wire,
    ``to_dict()`` adds ``"orders": {order_id: [request_id,
    global_request_id]}`` to oslo.context's keys.

    Unlike a RequestContext, building one never makes it the thread's
    current context (``overwrite`` is ignored): ``current`` does.

    :param orders: ``{order_id: RequestIds}``; values that are not a pair
        of strings or None are left out.
    :param traces: ``{order_id: carrier}`` (``worker.tracing``): the span
        of the cast that the steps of each order join; values that are
        not carriers are left out.
    """

    def __init__(self, *args: typing.Any,
                 orders: abc.Mapping[str, typing.Any] | None = None,
                 traces: abc.Mapping[str, typing.Any] | None = None,
                 **kwargs: typing.Any) -> None:
        before = oslo_context.get_current()
        kwargs['overwrite'] = False
        super().__init__(*args, **kwargs)
        if before is None:
            _set_current(None)
        self.orders: dict[str, RequestIds] = _orders(orders)
        self.traces: dict[str, tracing.Carrier] = _traces(traces)

    def to_dict(self) -> dict[str, typing.Any]:
        """The ids only, with ``orders``: what a cast's receiver logs
        with. The rest of oslo.context's dict (user, project, roles...)
        says nothing of a cast of steps and would cost every message
        some 300 bytes to encode and decode."""
        values: dict[str, typing.Any] = {
            'request_id': self.request_id,
            'global_request_id': self.global_request_id,
            ORDERS: {order_id: list(ids)
                     for order_id, ids in self.orders.items()}}
        if self.traces:
            values[TRACES] = self.traces
        return values

    @classmethod
    def from_dict(cls, values: dict[str, typing.Any],
                  **kwargs: typing.Any) -> typing.Self:
        """The context ``to_dict`` gave (or oslo.context's, without
        ``orders``)."""
        kwargs.setdefault('orders', values.get(ORDERS))
        kwargs.setdefault('traces', values.get(TRACES))
        return super().from_dict(values, **kwargs)

    def ids_of(self, order_id: str) -> RequestIds | None:
        """The request ids of ``order_id``, if the cast carries any."""
        return self.orders.get(order_id)

    def trace_of(self, order_id: str) -> tracing.Carrier | None:
        """The trace carrier of ``order_id``, if the cast carries one."""
        return self.traces.get(order_id)

    def for_order(self, order_id: str) -> Context:
        """The context to log about ``order_id`` with: its own ids, or
        this cast's if the cast carries none for it."""
        return for_ids(self.orders.get(order_id)) or self


def _orders(orders: typing.Any) -> dict[str, RequestIds]:
    """``{order_id: RequestIds}`` of the well-formed entries of ``orders``.
    """
    if not isinstance(orders, abc.Mapping):
        if orders is not None:
            LOG.warning('Ignored the orders of a cast\'s context: not a '
                        'mapping but %s', type(orders).__name__)
        return {}
    found = {}
    for order_id, ids in orders.items():
        if isinstance(order_id, str) and _is_ids(ids):
            found[order_id] = RequestIds(*ids)
    if len(found) != len(orders):
        LOG.warning('Ignored %d malformed entries of the orders of a '
                    'cast\'s context', len(orders) - len(found))
    return found


def _traces(traces: typing.Any) -> dict[str, tracing.Carrier]:
    """``{order_id: carrier}`` of the well-formed entries of ``traces``;
    the others are left out (a trace is never worth a log line per
    message)."""
    if not isinstance(traces, abc.Mapping):
        return {}
    found = {}
    for order_id, value in traces.items():
        carrier = tracing.carrier(value)
        if isinstance(order_id, str) and carrier is not None:
            found[order_id] = carrier
    return found


def _is_ids(ids: typing.Any) -> bool:
    return (isinstance(ids, (list, tuple)) and len(ids) == 2 and
            all(value is None or isinstance(value, str) for value in ids))
