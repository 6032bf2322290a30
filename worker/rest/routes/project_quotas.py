"""``/v1/project-quotas``: each project's bound of PENDING orders, and the
admin's overrides of it (``worker.api.QuotaAPI``)."""

import flask

from worker import api
from worker.rest import caller

blueprint = flask.Blueprint('project_quotas', __name__)


def _quotas():
    services = caller.services()
    return api.QuotaAPI(services.orders.database, services.conf,
                        services.orders.now)


def _view(quota):
    return {'project_id': quota.project_id,
            'pending_orders': quota.pending_orders,
            'override': quota.override, 'default': quota.default}


@blueprint.get('/v1/project-quotas')
def list_quotas():
    """The projects whose quota the admin overrode."""
    caller.authorize('retry:project_quota:list')
    caller.query(())
    return {'project_quotas': [_view(quota) for quota in _quotas().list()]}


@blueprint.get('/v1/project-quotas/<project_id>')
def show(project_id):
    """A project's quota: its readers may see it, the admin any."""
    caller.authorize('retry:project_quota:get', target_project=project_id)
    caller.query(())
    return _view(_quotas().get(project_id))


@blueprint.put('/v1/project-quotas/<project_id>')
def set_quota(project_id):
    """Override a project's quota; -1 for no bound."""
    caller.authorize('retry:project_quota:set')
    body = caller.json_body(('pending_orders',))
    return _view(_quotas().set(project_id, body.get('pending_orders')))


@blueprint.delete('/v1/project-quotas/<project_id>')
def delete(project_id):
    """Drop a project's override: the default applies again."""
    caller.authorize('retry:project_quota:delete')
    _quotas().delete(project_id)
    return flask.Response(status=204)
