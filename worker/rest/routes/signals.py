"""``/v1/orders/{order_id}/signals``: send a signal to an order's waiting
step."""

import flask

from worker.rest import caller
from worker.rest import errors
from worker.rest import views

blueprint = flask.Blueprint('signals', __name__)

SIGNAL_MEMBERS = ('name', 'payload', 'signal_id')


@blueprint.post('/v1/orders/<order_id>/signals')
def send(order_id):
    """Send a signal to a PENDING order: 202 (stored; the step that waits
    for it is cast), or 200 with the first signal when its ``signal_id``
    was sent already (nothing changed)."""
    caller.authorize('retry:order:signal')
    body = caller.json_body(SIGNAL_MEMBERS)
    if 'name' not in body:
        raise errors.APIError(400, 'retry.invalid_request',
                              'the member "name" is required')
    sent = caller.services().orders.signal(
        order_id, body['name'], body.get('payload'),
        signal_id=body.get('signal_id'), **caller.scope())
    response = flask.jsonify(views.signal(sent))
    response.status_code = 200 if sent.repeated else 202
    return response
