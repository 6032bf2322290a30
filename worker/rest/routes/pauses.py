"""``/v1/pauses``: pause and unpause order types, topics, resource keys,
orders and schedules (``worker.api.OrderAPI.pause``).

An admin pauses any target; a project member may pause its own orders
(``/v1/pauses/order/{order_id}``): another project's order is not found
(404), as everywhere in this API.
"""

import flask

from worker.rest import caller
from worker.rest import views

blueprint = flask.Blueprint('pauses', __name__)

SET_MEMBERS = ('reason',)


@blueprint.get('/v1/pauses')
def list_pauses():
    """What is paused, oldest first; ``?target=`` narrows it."""
    caller.authorize('retry:pause:list')
    target = caller.query(('target',)).get('target')
    return {'pauses': [views.pause(found) for found in
                       caller.services().orders.pauses(target=target)]}


@blueprint.put('/v1/pauses/<target>/<name>')
def pause(target, name):
    """Pause ``name`` of ``target``; the body, if any, may hold a
    ``reason``. 200 with the pause (the first one if it was paused)."""
    project_id = _authorize(target, 'retry:order:pause', 'retry:pause:set')
    body = caller.json_body(SET_MEMBERS) if flask.request.get_data(
        cache=True) else {}
    _check_schedule(target, name)
    return views.pause(caller.services().orders.pause(
        target, name, reason=body.get('reason'), project_id=project_id))


@blueprint.delete('/v1/pauses/<target>/<name>')
def unpause(target, name):
    """Unpause ``name`` of ``target``: 204, whether it was paused or not;
    the steps it held are cast at once."""
    project_id = _authorize(target, 'retry:order:unpause',
                            'retry:pause:delete')
    caller.services().orders.unpause(target, name, project_id=project_id)
    return flask.Response(status=204)


def _authorize(target, order_rule, other_rule):
    """Authorize the caller for ``target``; the project its order must be
    in (None: any, the caller may act on every project's)."""
    if target != 'order':
        caller.authorize(other_rule)
        return None
    caller.authorize(order_rule)
    return caller.scope().get('project_id')


def _check_schedule(target, name):
    """404 for a schedule that does not exist (``OrderAPI.pause`` does not
    look it up): ``ScheduleNotFound``."""
    if target == 'schedule':
        caller.services().schedules.get(name, all_projects=True)
