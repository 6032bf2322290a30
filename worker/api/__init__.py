"""The public Python API of barbican-retry: create, read, cancel, resume,
signal and wait for orders.

This is the interface that a service builds on, as nova's API service
builds on ``nova.compute.api``: an API server creates its long-running
work here and reads it back; the operator commands and the demo use it
too. What is stable across releases (doc/api.md): the names of this
module's ``__all__``, the parameters of their public methods, the fields
of the values, and which exception each failure raises. The values are
frozen dataclasses, never ORM objects or sessions, so nothing of the
database leaks to the caller.

Example::

    api = OrderAPI.from_config(conf)
    order = api.create('certificate', {'plugin_name': 'simple'},
                       project_id=project_id, idempotency_key=key,
                       context=context)
    order = api.wait(order.id, timeout=60, project_id=project_id)

A project's caller (``project_id`` given) never sees another project's
orders: they are ``OrderNotFound``, as if they did not exist. An
operator's view of every project is asked for by ``all_projects=True``;
a method that reads or changes orders refuses a call with neither
(``InvalidProjectScope``), so that a caller that forgets its project
fails closed.

What a caller passes is bounded (``[api_limits]``, the columns' sizes,
``worker.common.inputs``): every refusal is an ``InvalidRequest``, and
no other exception leaves this module for input it refuses.

The package's modules are private (their names are not part of the
stable API): ``errors``, ``values``, ``checks``, ``requests`` (one value
per request), ``commands`` (the transactions, which return what they
wrote and the steps to cast), ``casts``, ``queries`` and ``creating``
(``OrderAPI``'s bases), ``orders`` (``OrderAPI``), ``admission`` and
``coalesce``, ``bulk`` (bulk actions) and ``meta_filters`` (search by
metadata); but for ``schedules``, the public API of schedules
(doc/api.md), which ``worker.schedule_api`` re-exports for one release.
This module re-exports what callers use, and
``tests/unit/worker/api/test_exports.py`` pins the list.
"""

# Re-exported outside ``__all__``: see ``OTHER_NAMES``.
from worker.api.bulk import BulkResult
from worker.api.checks import checked  # noqa: F401
from worker.api.checks import MAX_IDEMPOTENCY_KEY_LENGTH  # noqa: F401
from worker.api.checks import MAX_LIMIT  # noqa: F401
from worker.api.checks import MAX_ORDER_ID_LENGTH  # noqa: F401
from worker.api.checks import MAX_ORDER_TYPE_LENGTH  # noqa: F401
from worker.api.checks import MAX_PROJECT_ID_LENGTH
from worker.api.checks import MAX_REASON_LENGTH  # noqa: F401
from worker.api.checks import MAX_REQUEST_ID_LENGTH  # noqa: F401
from worker.api.checks import MAX_START_DELAY  # noqa: F401
from worker.api.checks import MAX_URL_LENGTH  # noqa: F401
from worker.api.checks import MAX_WAIT_SECONDS
from worker.api.errors import AmbiguousOrderId
from worker.api.errors import IdempotencyConflict
from worker.api.errors import InvalidCharacters
from worker.api.errors import InvalidMeta
from worker.api.errors import InvalidProjectScope
from worker.api.errors import InvalidRequest
from worker.api.errors import OrderAPIError
from worker.api.errors import OrderNotCancellable
from worker.api.errors import OrderNotFound
from worker.api.errors import OrderNotResumable
from worker.api.errors import OrderNotSignallable
from worker.api.errors import OutOfBounds
from worker.api.errors import ProjectQuotaExceeded
from worker.api.errors import Timeout
from worker.api.errors import TooManyPendingOrders
from worker.api.errors import UnknownOrderType
from worker.api.errors import URLNotAllowed
from worker.api.meta_filters import parse as parse_meta_filters  # noqa: F401
from worker.api.orders import connect  # noqa: F401
from worker.api.orders import OrderAPI
from worker.api.pausing import Pause
from worker.api.pausing import PAUSE_TARGETS
from worker.api.project_quotas import ProjectQuota
from worker.api.project_quotas import QuotaAPI
from worker.api.queries import WAIT_INTERVAL_SECONDS  # noqa: F401
from worker.api.signalling import Signal
from worker.api.values import ACTIVE
from worker.api.values import BulkResume
from worker.api.values import CANCELLED
from worker.api.values import CANCELLING
from worker.api.values import DEFAULT_PROJECT
from worker.api.values import ERROR
from worker.api.values import FINAL_STATUSES
from worker.api.values import MAX_PRIORITY
from worker.api.values import MIN_PRIORITY
from worker.api.values import Order
from worker.api.values import ORDER_STATUSES
from worker.api.values import order_type_info
from worker.api.values import order_type_infos
from worker.api.values import OrderTypeInfo
from worker.api.values import PENDING
from worker.api.values import Requester
from worker.api.values import StepRun
from worker.api.values import StepState

__all__ = ['OrderAPI', 'Order', 'StepState', 'StepRun', 'OrderTypeInfo',
           'order_type_infos', 'order_type_info', 'BulkResume',
           'OrderAPIError', 'OrderNotFound', 'AmbiguousOrderId',
           'UnknownOrderType', 'InvalidMeta', 'InvalidRequest',
           'OutOfBounds', 'InvalidCharacters', 'InvalidProjectScope',
           'IdempotencyConflict', 'URLNotAllowed', 'TooManyPendingOrders',
           'ProjectQuotaExceeded', 'QuotaAPI', 'ProjectQuota',
           'OrderNotCancellable',
           'OrderNotResumable', 'Timeout', 'PENDING', 'ACTIVE', 'ERROR',
           'CANCELLING', 'CANCELLED', 'ORDER_STATUSES', 'FINAL_STATUSES',
           'DEFAULT_PROJECT', 'MIN_PRIORITY', 'MAX_PRIORITY',
           'MAX_PROJECT_ID_LENGTH', 'MAX_WAIT_SECONDS',
           'Signal', 'OrderNotSignallable', 'BulkResult', 'Pause',
           'PAUSE_TARGETS', 'Requester']

#: The names outside ``__all__`` that callers use: the other bounds
#: (doc/api.md "Bounds"), ``connect``, ``checked`` and
#: ``parse_meta_filters`` (``KEY=VALUE`` texts as ``list``'s ``meta``; not
#: stable).
OTHER_NAMES = ('MAX_IDEMPOTENCY_KEY_LENGTH', 'MAX_ORDER_ID_LENGTH',
               'MAX_ORDER_TYPE_LENGTH', 'MAX_URL_LENGTH', 'MAX_REASON_LENGTH',
               'MAX_REQUEST_ID_LENGTH', 'MAX_LIMIT', 'MAX_START_DELAY',
               'WAIT_INTERVAL_SECONDS', 'connect', 'checked',
               'parse_meta_filters')


def _name_them_here():
    """Give the classes of ``__all__`` this module as their own, as
    before it was a package: a traceback or a pickle names
    ``worker.api.OrderNotFound``, not the private module it lives in."""
    for name in __all__:
        value = globals()[name]
        if isinstance(value, type):
            value.__module__ = __name__


_name_them_here()
