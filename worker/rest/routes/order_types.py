"""``/v1/order-types``: the installed order types."""

import flask

from worker import api
from worker.rest import caller
from worker.rest import views

blueprint = flask.Blueprint('order_types', __name__)


@blueprint.get('/v1/order-types')
def list_types():
    """Every order type: its steps, compensation and meta_schema."""
    caller.authorize('retry:order_type:list')
    return {'order_types': [views.order_type(info)
                            for info in api.order_type_infos()]}
