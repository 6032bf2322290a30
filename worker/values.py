"""The ground floor: values every layer of the worker passes around.

A step to cast (``StepRef``), the request ids an order was created under
(``RequestIds``) and an event of an order to record (``Event``) are made
in one layer and read in others: the data layer writes events, the
notifications decide which deliveries to wake, the steps and the retry
daemon cast steps. They live here, below all of them, so that none of
those layers imports another one above it to name them
(``tests/unit/test_boundaries.py``). This module imports nothing of the
project: values only, no behaviour beyond reading them.
"""

import dataclasses
import typing

#: A trace's context as W3C headers (``traceparent``, ``tracestate``),
#: as ``worker.tracing`` makes and reads it.
Carrier = dict[str, str]


class RequestIds(typing.NamedTuple):
    """The request ids an order was created under (either may be None)."""

    request_id: str | None = None
    global_request_id: str | None = None


def request_ids_of(order: typing.Any) -> RequestIds | None:
    """The request ids of an order row, or None if it has none."""
    if order.request_id is None and order.global_request_id is None:
        return None
    return RequestIds(order.request_id, order.global_request_id)


class StepRef(typing.NamedTuple):
    """One step of an order, as a retry row names it and a worker runs it.

    ``generation`` is the step's fencing token at the time of the cast.
    ``request`` holds the request ids of its order, which its cast
    carries in its context (``worker.context``), not in the step: on the
    wire a step is ``[step, order_id, generation]`` (``wire``).
    ``order_type`` is its order's type, which picks the topic it is cast
    to (``worker.rpcapi.Topics``); None casts it to ``[worker] topic``.
    It is not on the wire either: the worker reads the order. ``trace``
    is the trace carrier (``worker.tracing``) its cast's span joins, None
    with tracing off; the cast carries its own span's in the context,
    per order.
    """

    step: str
    order_id: str
    generation: int
    request: RequestIds | None = None
    order_type: str | None = None
    trace: Carrier | None = None

    def wire(self) -> list[typing.Any]:
        """The step as a message carries it."""
        return [self.step, self.order_id, self.generation]


@dataclasses.dataclass(frozen=True)
class Event:
    """One event of an order to write: what happened, and the order's
    status after (``worker.notifications.events`` names them)."""

    event: str
    status: str
    step: str | None = None
    detail: dict[str, typing.Any] | None = None
