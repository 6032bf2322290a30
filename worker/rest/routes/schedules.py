"""``/v1/schedules``: periodic orders (create, list, show, delete,
trigger)."""

import flask

from worker.rest import caller
from worker.rest import views

blueprint = flask.Blueprint('schedules', __name__)

CREATE_MEMBERS = ('type', 'meta', 'priority', 'every', 'cron', 'timezone',
                  'overlap')


@blueprint.post('/v1/schedules')
def create():
    """Create a schedule in the caller's project: ``every`` (seconds or
    a duration such as ``"30d"``) or ``cron`` (in ``timezone``), with an
    ``overlap`` policy."""
    context = caller.authorize('retry:schedule:create')
    body = caller.json_body(CREATE_MEMBERS)
    schedule = caller.services().schedules.create(
        body.get('type'), body.get('meta', {}),
        project_id=context.project_id, every=body.get('every'),
        cron=body.get('cron'), priority=body.get('priority', 0),
        timezone=body.get('timezone'), overlap=body.get('overlap'))
    response = flask.jsonify(views.schedule(schedule))
    response.status_code = 201
    response.headers['Location'] = '/v1/schedules/%s' % schedule.id
    return response


@blueprint.get('/v1/schedules')
def list_schedules():
    """The schedules the caller may see."""
    caller.authorize('retry:schedule:list')
    caller.query(())
    return {'schedules': [
        views.schedule(schedule)
        for schedule in caller.services().schedules.list(**caller.scope())]}


@blueprint.get('/v1/schedules/<schedule_id>')
def show(schedule_id):
    """One schedule."""
    caller.authorize('retry:schedule:get')
    return views.schedule(caller.services().schedules.get(
        schedule_id, **caller.scope()))


@blueprint.delete('/v1/schedules/<schedule_id>')
def delete(schedule_id):
    """Delete a schedule: it creates no more orders."""
    caller.authorize('retry:schedule:delete')
    caller.services().schedules.delete(schedule_id, **caller.scope())
    return flask.Response(status=204)


@blueprint.post('/v1/schedules/<schedule_id>/trigger')
def trigger(schedule_id):
    """Create an order of the schedule now; its next tick stays."""
    caller.authorize('retry:schedule:trigger')
    order = caller.services().schedules.trigger(schedule_id,
                                                **caller.scope())
    response = flask.jsonify(views.order(order))
    response.status_code = 201
    response.headers['Location'] = '/v1/orders/%s' % order.id
    return response
