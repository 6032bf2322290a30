"""What every route reads of a request: who asks, what they may do, the
JSON body and the query.

The caller is read from the headers keystonemiddleware's ``auth_token``
sets (``X-Project-Id``, ``X-Roles``, ``X-User-Id``…) through
``oslo_context.RequestContext.from_environ``, and the request ids from
oslo.middleware's ``RequestId``: the project is never taken from the
body or the query.
"""

import json

import flask
from oslo_context import context as context_module
from webob import exc as webob_exc

from worker.rest import errors
from worker.rest import policies

#: ``flask.current_app.extensions`` key of the ``Services``.
EXTENSION = 'barbican_retry'


class Services:
    """What the routes call: the APIs, the policy enforcer, the options.

    :param orders: a ``worker.api.OrderAPI``.
    :param schedules: a ``worker.schedule_api.ScheduleAPI``.
    """

    def __init__(self, conf, orders, schedules, enforcer):
        self.conf = conf
        self.orders = orders
        self.schedules = schedules
        self.enforcer = enforcer


def services():
    """The ``Services`` of the running app."""
    return flask.current_app.extensions[EXTENSION]


def context():
    """The caller's ``RequestContext`` (built once per request).

    :raises errors.APIError: 401 without a project.
    """
    if 'context' not in flask.g:
        found = context_module.RequestContext.from_environ(
            flask.request.environ)
        if not found.project_id:
            raise errors.APIError(401, 'retry.unauthenticated',
                                  'the request has no project (a '
                                  'project-scoped token)')
        flask.g.context = found
    return flask.g.context


def authorize(rule, target_project=None):
    """Refuse the request (403) unless ``rule`` allows the caller on
    ``target_project`` (by default its own project)."""
    caller = context()
    target = {'project_id': target_project or caller.project_id}
    if not services().enforcer.enforce(rule, target, caller):
        raise errors.APIError(403, 'retry.forbidden',
                              'policy does not allow %s' % rule)
    return caller


def scope(asked_project=None):
    """The ``worker.api`` scope of the caller: ``all_projects=True`` if
    ``retry:all_projects`` allows it (``asked_project`` then narrows it),
    else its own project.

    :raises errors.APIError: 403 for ``asked_project`` without it.
    """
    caller = context()
    target = {'project_id': caller.project_id}
    if services().enforcer.enforce(policies.ALL_PROJECTS, target, caller):
        if asked_project is not None:
            return {'project_id': asked_project}
        return {'all_projects': True}
    if asked_project is not None and asked_project != caller.project_id:
        raise errors.APIError(403, 'retry.forbidden',
                              'only an administrator may list another '
                              'project\'s orders')
    return {'project_id': caller.project_id}


def _no_constant(name):
    raise ValueError('%s is not JSON' % name)


def json_body(allowed):
    """The request's JSON object, whose keys must be in ``allowed``.

    :raises errors.APIError: 415 if it is not ``application/json``, 413
        beyond the body limiter's size, 400 if it is no JSON object.
    """
    if not flask.request.mimetype == 'application/json':
        raise errors.APIError(415, 'retry.unsupported_media_type',
                              'the body must be application/json')
    try:
        data = flask.request.get_data(cache=True)
    except webob_exc.HTTPRequestEntityTooLarge:
        raise too_large() from None
    try:
        document = json.loads(data.decode('utf-8'),
                              parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise errors.APIError(400, 'retry.invalid_json',
                              'the body is not JSON: %s'
                              % str(exc)[:200]) from None
    if not isinstance(document, dict):
        raise errors.APIError(400, 'retry.invalid_json',
                              'the body must be a JSON object')
    unknown = sorted(set(document) - set(allowed))
    if unknown:
        raise errors.APIError(
            400, 'retry.invalid_request',
            'unknown member(s) %s; allowed: %s'
            % (', '.join(repr(name[:40]) for name in unknown[:5]),
               ', '.join(allowed)))
    return document


def too_large():
    """413 of a body over ``[oslo_middleware] max_request_body_size``."""
    return errors.APIError(413, 'retry.request_too_large',
                           'the body is larger than the server accepts '
                           '([oslo_middleware] max_request_body_size)')


def query(allowed, prefixes=()):
    """The query's parameters (one value each), all in ``allowed`` or
    starting with one of ``prefixes``.

    :raises errors.APIError: 400 for another or a repeated one.
    """
    args = flask.request.args
    unknown = sorted(name for name in set(args) - set(allowed)
                     if not name.startswith(tuple(prefixes)))
    if unknown:
        raise errors.APIError(400, 'retry.invalid_request',
                              'unknown query parameter(s) %s; allowed: %s'
                              % (', '.join(repr(name[:40])
                                           for name in unknown[:5]),
                                 ', '.join(allowed)))
    repeated = [name for name in args if len(args.getlist(name)) > 1]
    if repeated:
        raise errors.APIError(400, 'retry.invalid_request',
                              'query parameter %r given more than once'
                              % repeated[0][:40])
    return {name: args[name] for name in args}


def integer(text, name):
    """``text`` of the query as an integer.

    :raises errors.APIError: 400 if it is none.
    """
    try:
        return int(text)
    except ValueError:
        raise errors.APIError(400, 'retry.invalid_request',
                              '%s must be an integer, not %r'
                              % (name, text[:40])) from None
