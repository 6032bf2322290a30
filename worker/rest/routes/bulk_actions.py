"""``/v1/orders/bulk-actions``: one action on the orders that match a
filter (``OrderAPI.bulk``).

A member acts on its own project's orders only (``project_id`` of
another project is 403); an admin on every project's, or on one. One
request changes at most ``MAX_PER_REQUEST`` orders, so that it ends
within an HTTP request's time: ``matched`` above ``changed`` says that
more remain, and the same request again goes on with them.
"""

import datetime

import flask

from worker import api
from worker.rest import caller
from worker.rest import errors

blueprint = flask.Blueprint('bulk_actions', __name__)

MEMBERS = ('action', 'filters', 'priority', 'limit', 'dry_run', 'reason')
FILTERS = ('type', 'status', 'project_id', 'since', 'until', 'meta')
#: The most orders one request changes (and its default ``limit``).
MAX_PER_REQUEST = api.MAX_LIMIT


@blueprint.post('/v1/orders/bulk-actions')
def bulk_action():
    """Apply the body's ``action`` to the orders its ``filters`` match;
    what it matched and changed."""
    context = caller.authorize('retry:order:bulk')
    body = caller.json_body(MEMBERS)
    filters = body.get('filters', {})
    if not isinstance(filters, dict) or set(filters) - set(FILTERS):
        raise errors.APIError(
            400, 'retry.invalid_request',
            'filters is an object of %s' % ', '.join(FILTERS))
    limit = body.get('limit', MAX_PER_REQUEST)
    if isinstance(limit, int) and not isinstance(limit, bool) and \
            limit > MAX_PER_REQUEST:
        raise errors.APIError(
            400, 'retry.out_of_bounds',
            'limit is at most %d per request' % MAX_PER_REQUEST)
    done = caller.services().orders.bulk(
        body.get('action'), order_type=filters.get('type'),
        status=filters.get('status'), since=_time(filters, 'since'),
        until=_time(filters, 'until'), meta=filters.get('meta'),
        priority=body.get('priority'), limit=limit,
        dry_run=body.get('dry_run', False) is True,
        reason=body.get('reason', '%s in bulk by user %s of project %s' % (
            'paused' if body.get('action') == 'pause' else 'cancelled',
            context.user_id or '-', context.project_id)),
        context=context, **caller.scope(filters.get('project_id')))
    return {'action': done.action, 'dry_run': done.dry_run,
            'matched': done.matched, 'changed': done.changed,
            'limit': done.limit, 'failed': done.failed}


def _time(filters, name):
    """A filter's ISO 8601 time (UTC without a zone), or None."""
    text = filters.get(name)
    if text is None:
        return None
    try:
        return datetime.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise errors.APIError(
            400, 'retry.invalid_request',
            '%s must be an ISO 8601 time such as 2026-12-01T09:00:00Z'
            % name) from None
