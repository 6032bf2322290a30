"""Errors as JSON, in the OpenStack API working group's format.

Every error response is ``{"errors": [{"status", "code", "title",
"detail", "request_id"}]}``; ``code`` is stable (``retry.…``) and is
what a client matches on, never the words of ``detail``. The HTTP layer
maps ``worker.api``'s exceptions here and raises nothing else.
"""

import http

import flask

from worker import api
from worker.api import schedules as schedule_api

#: Seconds a client is told to wait before it tries again (429, 503).
RETRY_AFTER_SECONDS = 5


class APIError(Exception):
    """An error response: its status, stable code and detail.

    :param source: extra members of the error object (such as the JSON
        path and the rule of an invalid meta).
    """

    def __init__(self, status, code, detail, headers=None, source=None):
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.headers = dict(headers or {})
        self.source = source


# (exception class, status, code), the most specific first.
_MAPPING = (
    (api.InvalidMeta, 400, 'retry.invalid_meta'),
    (api.InvalidCharacters, 400, 'retry.invalid_characters'),
    (api.URLNotAllowed, 400, 'retry.url_not_allowed'),
    (schedule_api.InvalidSchedule, 400, 'retry.invalid_schedule'),
    (api.InvalidProjectScope, 400, 'retry.invalid_project_scope'),
    (api.InvalidRequest, 400, 'retry.invalid_request'),
    (api.UnknownOrderType, 400, 'retry.unknown_order_type'),
    (api.OrderNotFound, 404, 'retry.order_not_found'),
    (api.AmbiguousOrderId, 404, 'retry.order_not_found'),
    (schedule_api.ScheduleNotFound, 404, 'retry.schedule_not_found'),
    (api.IdempotencyConflict, 409, 'retry.idempotency_conflict'),
    (api.OrderNotCancellable, 409, 'retry.order_not_cancellable'),
    (api.OrderNotResumable, 409, 'retry.order_not_resumable'),
    (api.OrderNotSignallable, 409, 'retry.order_not_signallable'),
    (api.ProjectQuotaExceeded, 429, 'retry.project_quota_exceeded'),
    (api.TooManyPendingOrders, 429, 'retry.too_many_pending_orders'),
)


def from_api(exc):
    """The ``APIError`` of an ``api.OrderAPIError``."""
    if isinstance(exc, api.OutOfBounds):
        # A size (bytes) is a payload too large; a count or a length that
        # is not is an invalid request.
        if 'bytes' in str(exc.bound):
            return APIError(413, 'retry.too_large', str(exc),
                            source={'field': exc.field, 'bound': exc.bound})
        return APIError(400, 'retry.out_of_bounds', str(exc),
                        source={'field': exc.field, 'bound': exc.bound})
    for kind, status, code in _MAPPING:
        if isinstance(exc, kind):
            return APIError(status, code, str(exc),
                            headers=_retry_after(status),
                            source=_source(exc))
    return APIError(500, 'retry.internal_error',
                    'the request failed; see the API\'s log')


def _retry_after(status):
    """``Retry-After`` for a refusal for now."""
    if status in (429, 503):
        return {'Retry-After': str(RETRY_AFTER_SECONDS)}
    return {}


def _source(exc):
    """Where an invalid request failed, for the client to point at."""
    if isinstance(exc, api.InvalidMeta):
        return {'path': exc.path, 'rule': exc.rule}
    if isinstance(exc, api.IdempotencyConflict):
        return {'order_id': exc.order_id}
    if isinstance(exc, api.ProjectQuotaExceeded):
        return {'project_id': exc.project_id, 'quota': exc.max_pending,
                'pending': exc.pending}
    if isinstance(exc, api.TooManyPendingOrders):
        return {'order_type': exc.order_type,
                'max_pending': exc.max_pending, 'pending': exc.pending}
    return None


def unavailable(detail):
    """503: the database (or another dependency) cannot be reached."""
    return APIError(503, 'retry.service_unavailable', detail,
                    headers=_retry_after(503))


def body(status, code, detail, request_id, source=None):
    """The JSON document of one error."""
    error = {'status': status, 'code': code,
             'title': http.HTTPStatus(status).phrase, 'detail': detail,
             'request_id': request_id}
    if source:
        error['source'] = source
    return {'errors': [error]}


def response(error, request_id):
    """A Flask response of ``error`` (an ``APIError``)."""
    result = flask.jsonify(body(error.status, error.code, error.detail,
                                request_id, error.source))
    result.status_code = error.status
    result.headers.update(error.headers)
    return result
