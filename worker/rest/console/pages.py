"""The console's pages under ``/console``: server-rendered templates over
``worker.api`` (``OrderAPI``, ``ScheduleAPI``, ``Dashboard``), the same
policy rules as the REST API (``worker.rest.caller``).

A page shows an action only if the rule allows it, and the action's
route checks the rule again and the login's CSRF token: a forged form
is refused either way. Every response forbids inline scripts and
styles and any other origin (``SECURITY_HEADERS``).
"""

import datetime

import flask

from worker import api
from worker.api import dashboard as dashboard_module
from worker.api import logins
from worker import notification_admin
from worker.rest import caller
from worker.rest.console import auth
from worker.rest.console import graph
from worker.rest import errors

blueprint = flask.Blueprint('console', __name__, url_prefix='/console',
                            template_folder='templates',
                            static_folder='static')

SECURITY_HEADERS = {
    'Content-Security-Policy': (
        "default-src 'self'; script-src 'self'; style-src 'self'; "
        "img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; "
        "base-uri 'none'"),
    'X-Content-Type-Options': 'nosniff',
    'X-Frame-Options': 'DENY',
    'Referrer-Policy': 'same-origin',
    'Cache-Control': 'no-store',
}
PAGE_SIZE = 50
ORDER_FILTERS = ('status', 'type', 'project_id', 'marker', 'created_from',
                 'created_to', 'idempotency_key')
#: The orders counted at most (more shows as "10000 or more").
COUNT_CAP = 10000
_OPEN = ('console.login', 'console.static')


def _services():
    return caller.services()


def _logins():
    return logins.LoginAPI(_services().orders.database,
                           _services().orders.now)


def _dashboard():
    return dashboard_module.Dashboard(_services().orders, _services().conf)


@blueprint.before_request
def _identify():
    """The login of the request's cookie, as ``flask.g.login`` and its
    context; without one, the login page (or, noauth, a new login)."""
    if flask.request.endpoint in _OPEN:
        return None
    cookie = flask.request.cookies.get(auth.COOKIE)
    login = _logins().get(cookie) if cookie else None
    if login is None:
        if auth.noauth():
            return _start(auth.local_login(_services().orders.now()),
                          flask.request.full_path)
        return flask.redirect(flask.url_for('console.login'))
    flask.g.login = login
    flask.g.context = auth.context_of(login)
    return None


def _start(login, target):
    """Store ``login``, set its cookie and go to ``target``."""
    cookie = _logins().create(login)
    response = flask.redirect(target)
    auth.set_cookie(response, cookie, login, _services().orders.now())
    return response


@blueprint.after_request
def _secure(response):
    response.headers.update(SECURITY_HEADERS)
    return response


@blueprint.errorhandler(errors.APIError)
def _api_error(exc):
    return _error_page(exc.status, exc.detail)


@blueprint.errorhandler(api.OrderAPIError)
def _order_api_error(exc):
    found = errors.from_api(exc)
    return _error_page(found.status, found.detail)


def _error_page(status, detail):
    return flask.render_template('error.html', status=status,
                                 detail=detail), status


def _allowed(rule, project_id=None):
    """True if the caller's policy allows ``rule`` on ``project_id``."""
    context = flask.g.context
    target = {'project_id': project_id or context.project_id}
    return _services().enforcer.enforce(rule, target, context)


def _render(template, **values):
    return flask.render_template(
        template, login=flask.g.login, csrf_token=flask.g.login.csrf_token,
        all_projects=_allowed('retry:all_projects'),
        refresh=_services().conf.api.console_refresh_seconds, **values)


@blueprint.route('/login', methods=('GET', 'POST'))
def login():
    """The login form; a POST exchanges its credentials with Keystone."""
    if auth.noauth():
        return flask.redirect(flask.url_for('console.overview'))
    if flask.request.method == 'GET':
        return flask.render_template('login.html', failure=None)
    try:
        found = auth.keystone_login(flask.request.form)
    except auth.LoginFailed as exc:
        return flask.render_template('login.html', failure=str(exc)), 401
    return _start(found, flask.url_for('console.overview'))


@blueprint.post('/logout')
def logout():
    """End the login (its CSRF token required) and forget the cookie."""
    auth.check_csrf(flask.g.login)
    _logins().end(flask.request.cookies[auth.COOKIE])
    response = flask.redirect(flask.url_for('console.login'))
    response.delete_cookie(auth.COOKIE, path='/console')
    return response


@blueprint.get('/')
def overview():
    """Orders by status and type, the last minutes, the deployment."""
    caller.authorize('retry:order:list')
    return _render('overview.html',
                   overview=_dashboard().overview(**caller.scope()))


@blueprint.get('/overview.json')
def overview_json():
    """The overview's live numbers, for the page's refresh."""
    caller.authorize('retry:order:list')
    found = _dashboard().overview(**caller.scope())
    by_status = {}
    for (status, _kind), count in found.counts.items():
        by_status[status] = by_status.get(status, 0) + count
    return {'now': found.now.isoformat(sep=' ', timespec='seconds'),
            'by_status': by_status}


@blueprint.get('/orders')
def orders():
    """A page of orders, filtered, with their count and the next page's
    marker."""
    caller.authorize('retry:order:list')
    query = {name: value.strip() for name, value in
             flask.request.args.items()
             if name in ORDER_FILTERS and value.strip()}
    filters = dict(
        status=query.get('status'), order_type=query.get('type'),
        created_from=_moment(query.get('created_from'), 'created_from'),
        created_to=_moment(query.get('created_to'), 'created_to'),
        idempotency_key=query.get('idempotency_key'),
        **caller.scope(query.get('project_id')))
    orders_api = _services().orders
    found = orders_api.list(limit=PAGE_SIZE, marker=query.get('marker'),
                            with_meta=False, **filters)
    following = None
    if len(found) == PAGE_SIZE:
        following = dict(query, marker=found[-1].id)
    return _render('orders.html', orders=found, query=query,
                   following=following, statuses=api_statuses(),
                   count=orders_api.count(cap=COUNT_CAP, **filters),
                   count_cap=COUNT_CAP,
                   types=[info.name for info in api.order_type_infos()])


def _moment(text, name):
    """A filter's time (``YYYY-MM-DDTHH:MM``, UTC), or None.

    :raises errors.APIError: 400 for another text.
    """
    if text is None:
        return None
    try:
        return datetime.datetime.fromisoformat(text)
    except ValueError:
        raise errors.APIError(400, 'retry.invalid_request',
                              '%s must be a time such as 2026-11-28T09:00, '
                              'not %r' % (name, text[:40])) from None


def api_statuses():
    """The order statuses a filter may name."""
    return (api.PENDING, api.ACTIVE, api.ERROR, api.CANCELLING,
            api.CANCELLED)


def _detail(order_id):
    return _dashboard().order(order_id, **caller.scope())


@blueprint.get('/orders/<order_id>')
def order(order_id):
    """An order: its graph, timeline, events, steps and explanation."""
    caller.authorize('retry:order:get')
    detail = _detail(order_id)
    project = detail.order.project_id
    return _render(
        'order.html', detail=detail, layout=graph.layout(detail.order.steps),
        node=graph, can_cancel=_allowed('retry:order:cancel', project),
        can_resume=_allowed('retry:order:resume', project))


@blueprint.get('/orders/<order_id>.json')
def order_json(order_id):
    """The order's status and its steps', for the page's refresh."""
    caller.authorize('retry:order:get')
    found = _services().orders.get(order_id, **caller.scope())
    return {'status': found.status,
            'steps': {step.name: step.status for step in found.steps}}


@blueprint.get('/orders/<order_id>/<action>')
def confirm(order_id, action):
    """The confirmation of a cancel or a resume (403 for a caller the
    rule does not allow)."""
    caller.authorize(_action_rule(action))
    found = _services().orders.get(order_id, **caller.scope())
    return _render('confirm.html', order=found, action=action)


def _action_rule(action):
    if action not in ('cancel', 'resume'):
        flask.abort(404)
    return 'retry:order:%s' % action


@blueprint.post('/orders/<order_id>/<action>')
def act(order_id, action):
    """Cancel or resume the order (its CSRF token and the rule
    required), then show it."""
    context = caller.authorize(_action_rule(action))
    auth.check_csrf(flask.g.login)
    orders_api = _services().orders
    if action == 'cancel':
        orders_api.cancel(order_id, reason='cancelled from the console by '
                          'user %s of project %s' % (
                              context.user_name or context.user_id,
                              context.project_id), **caller.scope())
    else:
        orders_api.resume(order_id, context=context, **caller.scope())
    return flask.redirect(flask.url_for('console.order', order_id=order_id))


@blueprint.get('/workers')
def workers():
    """The processes, their heartbeats and what they hold; the pass
    lock (an administrator's page: every project's steps)."""
    caller.authorize('retry:all_projects')
    return _render('workers.html', deployment=_dashboard().deployment())


@blueprint.get('/schedules')
def schedules():
    """The schedules; and, for an administrator, the notification
    URLs (whether a secret is set, never the secret)."""
    caller.authorize('retry:schedule:list')
    found = _services().schedules.list(**caller.scope())
    urls = None
    if _allowed('retry:notification_url:list'):
        orders_api = _services().orders
        urls = notification_admin.list_urls(orders_api.database,
                                            orders_api.now())
    return _render('schedules.html', schedules=found, urls=urls)
