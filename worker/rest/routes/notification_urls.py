"""``/v1/notification-urls``: the operator's URLs, their owners and
secrets (admin only; a secret is never read back)."""

import flask

from worker import notification_admin
from worker.rest import caller
from worker.rest import errors
from worker.rest import views

blueprint = flask.Blueprint('notification_urls', __name__)

SECRET_MEMBERS = ('secret', 'keep_old_for_seconds', 'project_id', 'global')
ADD_MEMBERS = ('url',) + SECRET_MEMBERS


def _admin():
    services = caller.services()
    return services, services.orders.database, services.orders.now()


@blueprint.get('/v1/notification-urls')
def list_urls():
    """Every URL: its state and owner, whether it has a secret."""
    caller.authorize('retry:notification_url:list')
    caller.query(())
    _, database, now = _admin()
    return {'notification_urls': [
        views.url(values)
        for values in notification_admin.list_urls(database, now)]}


@blueprint.post('/v1/notification-urls')
def add():
    """Give a URL (added if new) a secret of its own: 201 with the
    secret generated, shown this once."""
    caller.authorize('retry:notification_url:set_secret')
    body = caller.json_body(ADD_MEMBERS)
    services, database, now = _admin()
    if not isinstance(body.get('url'), str):
        raise errors.APIError(400, 'retry.invalid_request',
                              'the member "url" (a string) is required')
    url_id = _change(notification_admin.add_url, database, services.conf,
                     body['url'], now)
    response = flask.jsonify(_set_secret(services, database, now, url_id,
                                         body))
    response.status_code = 201
    return response


@blueprint.put('/v1/notification-urls/<int:url_id>/secret')
def set_secret(url_id):
    """Set or rotate a URL's secret; the one replaced signs for
    ``keep_old_for_seconds`` more."""
    caller.authorize('retry:notification_url:set_secret')
    body = caller.json_body(SECRET_MEMBERS)
    services, database, now = _admin()
    return _set_secret(services, database, now, url_id, body)


@blueprint.put('/v1/notification-urls/<int:url_id>/owner')
def set_owner(url_id):
    """Let one project's orders name the URL (``project_id``), or every
    project's (``"global": true``)."""
    caller.authorize('retry:notification_url:set_owner')
    body = caller.json_body(('project_id', 'global'))
    owner = _owner(body)
    if owner is notification_admin.UNCHANGED:
        raise errors.APIError(400, 'retry.invalid_request',
                              'give "project_id" or "global": true')
    _, database, now = _admin()
    return views.url(_change(notification_admin.set_owner, database,
                             url_id, owner, now))


def _set_secret(services, database, now, url_id, body):
    values, generated = _change(
        notification_admin.set_secret, database, services.conf, url_id,
        now, secret=body.get('secret'),
        keep_old_for=body.get('keep_old_for_seconds'), owner=_owner(body))
    return dict(views.url(values), generated_secret=generated)


def _owner(body):
    """The owner a body names: a project, None (global) or UNCHANGED."""
    if body.get('global') is True:
        if body.get('project_id') is not None:
            raise errors.APIError(400, 'retry.invalid_request',
                                  '"project_id" and "global" exclude each '
                                  'other')
        return None
    if 'project_id' in body:
        return body['project_id']
    return notification_admin.UNCHANGED


def _change(function, *args, **kwargs):
    """Call ``function``, its refusals as 400 and 404."""
    try:
        return function(*args, **kwargs)
    except notification_admin.UrlNotFound as exc:
        raise errors.APIError(404, 'retry.notification_url_not_found',
                              str(exc)) from None
    except notification_admin.InvalidUrlChange as exc:
        raise errors.APIError(400, 'retry.invalid_request',
                              str(exc)) from None
    except notification_admin.NotConfigured as exc:
        raise errors.APIError(503, 'retry.not_configured',
                              str(exc)) from None
