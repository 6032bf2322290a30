"""The exceptions of ``worker.api``: every refusal and failure a caller
of the front door sees (doc/api.md names which method raises which).

``InvalidRequest`` and its kinds are what no other exception may stand
for: no other exception leaves ``worker.api`` for input it refuses.
"""

from worker.order_types import meta as meta_module


class OrderAPIError(Exception):
    """Base class of the errors of ``worker.api``."""


class OrderNotFound(OrderAPIError, LookupError):
    """No such order, or not one of the caller's project."""


class AmbiguousOrderId(OrderAPIError, LookupError):
    """An id prefix that starts the ids of several orders."""


class UnknownOrderType(OrderAPIError, LookupError):
    """No order type of this name is installed; the message lists those
    that are."""


class InvalidRequest(OrderAPIError, ValueError):
    """A parameter that can never be right (a priority out of range, an
    empty project id, an unknown marker); the message names it."""


class OutOfBounds(InvalidRequest):
    """A value beyond a bound: too long, too large, too deep or too many
    (``[api_limits]``, doc/api.md "Bounds"). ``field`` names the
    parameter, ``bound`` says what it must be."""

    def __init__(self, message, field, bound):
        super().__init__(message)
        self.field = field
        self.bound = bound


class InvalidCharacters(InvalidRequest):
    """A parameter that must be a string and is not, or that holds a
    character it may not: a NUL, a lone surrogate or a control
    character. ``field`` names it, ``bound`` says what it must be."""

    def __init__(self, message, field, bound):
        super().__init__(message)
        self.field = field
        self.bound = bound


class InvalidProjectScope(InvalidRequest):
    """A call that reads or changes orders (or schedules) without a
    ``project_id`` and without ``all_projects=True``, or with both."""


class InvalidMeta(InvalidRequest, meta_module.InvalidMeta):
    """The order's ``meta`` does not satisfy its type's ``meta_schema``.

    ``path`` is where (a JSON path: ``$``, ``$.key``, ``$.list[2]``),
    ``rule`` which keyword of the schema failed (``type``, ``required``,
    ``additionalProperties``...) and ``reason`` jsonschema's words.
    """


class IdempotencyConflict(OrderAPIError):
    """The project has an order with this idempotency key, created by a
    different request; nothing was created."""

    def __init__(self, message, order_id):
        super().__init__(message)
        #: The order the key belongs to.
        self.order_id = order_id


class URLNotAllowed(InvalidRequest):
    """A callback URL whose host ``[notifications] allowed_hosts`` does
    not allow, that is not an http(s) URL, or that another project owns
    (it has a secret of its own: ``notification url set-secret``)."""


class TooManyPendingOrders(OrderAPIError):
    """The order type's ``[order_type:T] max_pending`` is reached: the
    orders asked for would put more of its orders PENDING than it allows.
    Nothing was created; a create may succeed once some of them have
    ended (ACTIVE, ERROR or CANCELLED)."""

    def __init__(self, message, order_type, max_pending, pending):
        super().__init__(message)
        #: The order type.
        self.order_type = order_type
        #: Its ``max_pending``.
        self.max_pending = max_pending
        #: How many of its orders were PENDING.
        self.pending = pending


class ProjectQuotaExceeded(TooManyPendingOrders):
    """The project's quota of PENDING orders (``[quota]
    pending_orders_per_project``, or the admin's override of it) is
    reached. ``max_pending`` is the project's quota and ``pending`` its
    PENDING orders. Nothing was created."""

    def __init__(self, message, order_type, max_pending, pending,
                 project_id):
        super().__init__(message, order_type, max_pending, pending)
        #: The project.
        self.project_id = project_id


class OrderNotCancellable(OrderAPIError):
    """The order is ACTIVE or ERROR: it has ended, it cannot be
    cancelled."""


class OrderNotResumable(OrderAPIError):
    """The order is not ERROR (PENDING, CANCELLING, ACTIVE or CANCELLED):
    only an order that failed can be resumed. The message names its
    status."""


class OrderNotSignallable(OrderAPIError):
    """The order is not PENDING (it ended, or is being cancelled): no step
    of it will wait for a signal again. The message names its status."""


class Timeout(OrderAPIError):
    """``wait`` timed out before the order ended; ``order`` is the order
    as last read."""

    def __init__(self, message, order):
        super().__init__(message)
        self.order = order
