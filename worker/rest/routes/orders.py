"""``/v1/orders``: create, list, show, cancel, resume, history."""

import datetime

import flask

from worker import api
from worker.rest import caller
from worker.rest import errors
from worker.rest import views

blueprint = flask.Blueprint('orders', __name__)

CREATE_MEMBERS = ('type', 'meta', 'priority', 'callback_urls', 'not_before')
LIST_PARAMETERS = ('status', 'type', 'project_id', 'limit', 'marker')
#: The prefix of a search by metadata: ``meta.issuer.name=x``.
META_PREFIX = 'meta.'
IDEMPOTENCY_HEADER = 'Idempotency-Key'


@blueprint.post('/v1/orders')
def create():
    """Create an order in the caller's project: 201, or 200 with the
    order an earlier request with the same ``Idempotency-Key`` made."""
    context = caller.authorize('retry:order:create')
    body = caller.json_body(CREATE_MEMBERS)
    if 'type' not in body:
        raise errors.APIError(400, 'retry.invalid_request',
                              'the member "type" is required')
    order = caller.services().orders.create(
        body['type'], body.get('meta', {}), project_id=context.project_id,
        idempotency_key=flask.request.headers.get(IDEMPOTENCY_HEADER),
        priority=body.get('priority', 0),
        callback_urls=body.get('callback_urls', ()), context=context,
        not_before=_start_time(body.get('not_before')))
    # The order of an earlier request keeps that request's id.
    status = 201 if order.request_id == context.request_id else 200
    response = flask.jsonify(views.order(order))
    response.status_code = status
    response.headers['Location'] = '/v1/orders/%s' % order.id
    return response


def _start_time(text):
    """``not_before``: an ISO 8601 time with its zone, or None."""
    if text is None:
        return None
    moment = None
    if isinstance(text, str):
        try:
            moment = datetime.datetime.fromisoformat(text)
        except ValueError:
            pass
    if moment is None or moment.tzinfo is None:
        raise errors.APIError(
            400, 'retry.invalid_request',
            'not_before must be an ISO 8601 time with its zone, such as '
            '2026-12-01T09:00:00Z')
    return moment


@blueprint.get('/v1/orders')
def list_orders():
    """A page of the orders the caller may see, oldest first, with a
    ``next`` link when the page is full."""
    caller.authorize('retry:order:list')
    query = caller.query(LIST_PARAMETERS, prefixes=(META_PREFIX,))
    services = caller.services()
    limit = caller.integer(query['limit'], 'limit') if 'limit' in query \
        else services.conf.api.default_page_size
    found = services.orders.list(
        status=query.get('status'), order_type=query.get('type'),
        limit=limit, marker=query.get('marker'), with_meta=False,
        meta=_meta_filters(query),
        **caller.scope(query.get('project_id')))
    page = {'orders': [views.order_in_list(order) for order in found]}
    if found and len(found) == limit:
        page['next'] = flask.url_for(
            'orders.list_orders', _external=False,
            **dict(query, marker=found[-1].id, limit=limit))
    return page


def _meta_filters(query):
    """``list``'s ``meta`` of the query's ``meta.<path>=value``
    parameters (each value a JSON scalar if it reads as one), or None."""
    items = ['%s=%s' % (name[len(META_PREFIX):], value)
             for name, value in sorted(query.items())
             if name.startswith(META_PREFIX)]
    return api.parse_meta_filters(items) or None


@blueprint.get('/v1/orders/<order_id>')
def show(order_id):
    """One order and its steps."""
    caller.authorize('retry:order:get')
    orders = caller.services().orders
    return views.order(orders.get(order_id, **caller.scope()))


@blueprint.get('/v1/orders/<order_id>/history')
def history(order_id):
    """Every run of the order's steps that ended, oldest first."""
    caller.authorize('retry:order:history')
    scope = caller.scope()
    orders = caller.services().orders
    # By its full id only: a prefix is the operator commands' convenience.
    orders.get(order_id, **scope)
    return {'history': [views.run(run)
                        for run in orders.history(order_id, **scope)]}


@blueprint.post('/v1/orders/<order_id>/cancel')
def cancel(order_id):
    """Cancel a PENDING order; the reason recorded names who asked, and
    the order's history records it."""
    context = caller.authorize('retry:order:cancel')
    order = caller.services().orders.cancel(
        order_id, reason='cancelled by %s' % _who(context),
        requested_by=api.Requester.of_context(context), **caller.scope())
    return views.order(order)


@blueprint.post('/v1/orders/<order_id>/resume')
def resume(order_id):
    """Resume an ERROR order; who asked is logged with its ids, and the
    order's history records it."""
    context = caller.authorize('retry:order:resume')
    return views.order(caller.services().orders.resume(
        order_id, context=context,
        requested_by=api.Requester.of_context(context), **caller.scope()))


def _who(context):
    """The user and request of ``context``, for the order's record."""
    return 'user %s of project %s (request %s)' % (
        context.user_id or '-', context.project_id, context.request_id)
