"""The Flask application of ``barbican-retry-api``.

``create_app`` builds it over the public APIs (``worker.api``,
``worker.schedule_api``); the middleware around it is
``worker.rest.pipeline``'s. Every error leaves as JSON
(``worker.rest.errors``), every ``/v1`` response says its microversion.
"""

import flask
from oslo_db import exception as db_exception
from oslo_log import log as logging
import sqlalchemy.exc
from werkzeug import exceptions as http_exceptions

from worker import api
from worker.rest import caller
from worker.rest.console import pages as console_pages
from worker.rest import errors
from worker.rest import microversions
from worker.rest import policies
from worker.rest.routes import bulk_actions
from worker.rest.routes import notification_urls
from worker.rest.routes import order_types
from worker.rest.routes import orders
from worker.rest.routes import pauses
from worker.rest.routes import project_quotas
from worker.rest.routes import schedules
from worker.rest.routes import signals
from worker.rest.routes import versions

LOG = logging.getLogger(__name__)

BLUEPRINTS = (versions.blueprint, orders.blueprint, order_types.blueprint,
              schedules.blueprint, notification_urls.blueprint,
              project_quotas.blueprint, signals.blueprint,
              bulk_actions.blueprint, pauses.blueprint,
              console_pages.blueprint)

# What a database that cannot be reached raises through worker.api.
_UNREACHABLE = (db_exception.DBConnectionError,
                sqlalchemy.exc.OperationalError,
                sqlalchemy.exc.InterfaceError, sqlalchemy.exc.TimeoutError)


def create_app(conf, orders_api, schedules_api, enforcer=None):
    """The Flask app over ``orders_api`` (an ``OrderAPI``) and
    ``schedules_api`` (a ``ScheduleAPI``); ``enforcer`` defaults to one
    on ``conf`` (``policies.enforcer``)."""
    app = flask.Flask('barbican-retry-api')
    # Errors are answered here, as JSON, never by Werkzeug's debugger.
    app.config['PROPAGATE_EXCEPTIONS'] = False
    app.json.sort_keys = False
    app.config['CONSOLE_CONF'] = conf
    app.extensions[caller.EXTENSION] = caller.Services(
        conf, orders_api, schedules_api,
        enforcer or policies.enforcer(conf))
    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)
    app.before_request(_negotiate)
    app.after_request(_version_headers)
    app.register_error_handler(errors.APIError, _api_error)
    app.register_error_handler(api.OrderAPIError, _order_api_error)
    app.register_error_handler(http_exceptions.HTTPException, _http_error)
    for kind in _UNREACHABLE:
        app.register_error_handler(kind, _unreachable)
    app.register_error_handler(Exception, _unexpected)
    return app


def _versioned():
    return flask.request.path.startswith('/v1')


def _negotiate():
    """The microversion of a ``/v1`` request (406 if unsupported)."""
    if _versioned():
        flask.g.version = microversions.MIN_VERSION
        flask.g.version = microversions.negotiate(flask.request.headers)


def _version_headers(response):
    if _versioned() and 'version' in flask.g:
        response.headers.update(microversions.headers(flask.g.version))
    return response


def _request_id():
    return flask.request.environ.get('openstack.request_id')


def _api_error(exc):
    return errors.response(exc, _request_id())


def _order_api_error(exc):
    return errors.response(errors.from_api(exc), _request_id())


def _http_error(exc):
    """Werkzeug's own (404 no route, 405 method) as JSON."""
    if exc.code == 413:
        return errors.response(caller.too_large(), _request_id())
    code = {404: 'retry.not_found', 405: 'retry.method_not_allowed'}.get(
        exc.code, 'retry.http_%d' % exc.code)
    response = errors.response(
        errors.APIError(exc.code, code, exc.description), _request_id())
    if exc.code == 405:
        response.headers['Allow'] = ', '.join(exc.valid_methods or ())
    return response


def _unreachable(exc):
    LOG.warning('Database unreachable: %s', exc)
    return errors.response(
        errors.unavailable('the database cannot be reached; try again'),
        _request_id())


def _unexpected(exc):
    LOG.exception('Request %s %s failed', flask.request.method,
                  flask.request.path)
    return errors.response(errors.APIError(
        500, 'retry.internal_error',
        'the request failed; the API\'s log has request %s'
        % _request_id()), _request_id())
