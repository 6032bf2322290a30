"""The names ``worker.api`` exports, pinned (as Temporal's
``tests/test_client_exports.py`` pins ``temporalio.client``'s): a name
that leaves, or one that arrives, is a change of the stable API
(doc/api.md) and must be made here on purpose."""

import pickle

from worker import api
from worker.api import schedules
from worker import schedule_api

STABLE = [
    'OrderAPI', 'Order', 'StepState', 'StepRun', 'OrderTypeInfo',
    'order_type_infos', 'order_type_info', 'BulkResume', 'OrderAPIError',
    'OrderNotFound', 'AmbiguousOrderId', 'UnknownOrderType', 'InvalidMeta',
    'InvalidRequest', 'OutOfBounds', 'InvalidCharacters',
    'InvalidProjectScope', 'IdempotencyConflict', 'URLNotAllowed',
    'TooManyPendingOrders', 'ProjectQuotaExceeded', 'QuotaAPI',
    'ProjectQuota', 'OrderNotCancellable', 'OrderNotResumable',
    'Timeout', 'PENDING', 'ACTIVE', 'ERROR', 'CANCELLING', 'CANCELLED',
    'ORDER_STATUSES', 'FINAL_STATUSES', 'DEFAULT_PROJECT', 'MIN_PRIORITY',
    'MAX_PRIORITY', 'MAX_PROJECT_ID_LENGTH', 'MAX_WAIT_SECONDS',
    'Signal', 'OrderNotSignallable', 'BulkResult', 'Pause',
    'PAUSE_TARGETS', 'Requester']

# Outside ``__all__``, used by the operator commands, the demo, the
# tests and doc/api.md's "Bounds".
OTHERS = ['MAX_IDEMPOTENCY_KEY_LENGTH', 'MAX_ORDER_ID_LENGTH',
          'MAX_ORDER_TYPE_LENGTH', 'MAX_URL_LENGTH', 'MAX_REASON_LENGTH',
          'MAX_REQUEST_ID_LENGTH', 'MAX_LIMIT', 'MAX_START_DELAY',
          'WAIT_INTERVAL_SECONDS', 'connect', 'checked',
          'parse_meta_filters']


def test_the_stable_names_are_pinned():
    assert api.__all__ == STABLE


def test_every_exported_name_is_there():
    assert sorted(api.OTHER_NAMES) == sorted(OTHERS)
    missing = [name for name in STABLE + OTHERS if not hasattr(api, name)]
    assert missing == []


def test_the_package_exports_nothing_else_public():
    """A public name of ``worker.api`` is one of the pinned ones or a
    module of the package (private by doc/api.md)."""
    known = STABLE + OTHERS + ['OTHER_NAMES']
    extra = sorted(name for name, value in vars(api).items()
                   if not name.startswith('_') and name not in known and
                   not getattr(value, '__name__', '').startswith(
                       'worker.api.'))
    assert extra == []


def test_the_classes_keep_the_module_callers_name_them_by():
    # A traceback says worker.api.OrderNotFound, as before the package.
    assert api.OrderNotFound.__module__ == 'worker.api'
    assert api.OrderAPI.__module__ == 'worker.api'
    error = pickle.loads(pickle.dumps(api.OrderNotFound('no order x')))
    assert isinstance(error, api.OrderNotFound)
    assert str(error) == 'no order x'


def test_the_schedule_api_module_names_the_package_s_schedules():
    assert schedule_api.__all__ == schedules.__all__
    for name in schedules.__all__:
        assert getattr(schedule_api, name) is getattr(schedules, name)
