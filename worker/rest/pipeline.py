"""The middleware around the Flask app, built in code (no paste).

Outermost first: ``HTTPProxyToWSGI`` (the scheme and host a proxy in
front saw), ``RequestId`` (``x-openstack-request-id`` on every response,
and a caller's ``X-OpenStack-Request-ID`` kept as the global request
id), ``CORS`` (``[cors]``), ``RequestBodySizeLimiter`` (``[oslo_middleware]
max_request_body_size``, answered with a JSON 413), ``/healthcheck``
(no authentication), then keystonemiddleware's ``auth_token`` (with
``[api] auth_strategy = keystone``; with ``noauth``, ``LoopbackOnly``)
and ``audit`` (state-changing requests, as CADF events), then the app.
``/``, the version document, needs no authentication either; nor does
the console (``/console``), which logs its users in with Keystone itself
(``worker.rest.console.auth``): with ``noauth`` it is behind
``LoopbackOnly`` too.
"""

import ipaddress

from keystonemiddleware import audit
from keystonemiddleware import auth_token
from oslo_middleware import cors
from oslo_middleware import healthcheck
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import request_id
from oslo_middleware import sizelimit
import webob
import webob.dec

from worker.rest import conf as api_conf
from worker.rest import errors

HEALTHCHECK_PATH = '/healthcheck'
CONSOLE_PREFIX = '/console'
#: What the audit middleware lets through unrecorded: reads.
READ_METHODS = 'GET,HEAD,OPTIONS'


def build(conf, app):
    """The WSGI application of ``app`` (a Flask app) behind its
    middleware, configured by ``conf``."""
    protected = app
    if conf.api.audit:
        protected = audit.AuditMiddleware(
            protected, audit_map_file=conf.api.audit_map_file,
            ignore_req_list=READ_METHODS, service_name='barbican-retry',
            oslo_config_config=conf)
    console = app
    if conf.api.auth_strategy == api_conf.KEYSTONE:
        protected = auth_token.AuthProtocol(
            protected, {'oslo_config_config': conf})
    else:
        protected = LoopbackOnly(protected)
        console = LoopbackOnly(app)
    routed = _Paths({HEALTHCHECK_PATH: healthcheck.Healthcheck(None, conf),
                     '/': app}, protected, {CONSOLE_PREFIX: console})
    limited = JsonSizeLimiter(routed, conf)
    shared = cors.CORS(limited, conf)
    identified = request_id.RequestId(shared, conf)
    return http_proxy_to_wsgi.HTTPProxyToWSGI(identified, conf)


class _Paths:
    """Send the requests of a few exact paths, and of the paths under a
    few prefixes, to their own apps, the rest to ``default``."""

    def __init__(self, apps, default, prefixes=None):
        self._apps = apps
        self._default = default
        self._prefixes = dict(prefixes or {})

    def __call__(self, environ, start_response):
        path = environ.get('PATH_INFO') or '/'
        app = self._apps.get(path)
        if app is None:
            app = next((found for prefix, found in self._prefixes.items()
                        if path == prefix or path.startswith(prefix + '/')),
                       self._default)
        return app(environ, start_response)


class JsonSizeLimiter(sizelimit.RequestBodySizeLimiter):
    """oslo.middleware's body limiter, its 413 in the API's JSON errors.

    A body that says its length is refused here; one sent in chunks is
    cut by the limiter's reader, and refused by the app that reads it.
    """

    @webob.dec.wsgify
    def __call__(self, req):
        max_size = self._conf_get('max_request_body_size')
        if req.content_length is not None and req.content_length > max_size:
            return json_error(req, 413, 'retry.request_too_large',
                              'the body is larger than the server accepts '
                              '([oslo_middleware] max_request_body_size)')
        if req.content_length is None:
            req.body_file = sizelimit.LimitingReader(req.body_file, max_size)
        return req.get_response(self.application)


class LoopbackOnly:
    """noauth's guard: a request from another host, or relayed by a
    proxy, is refused (403) before the app reads its identity headers.

    ``[api] bind_host`` keeps ``barbican-retry-api``'s own servers on
    127.0.0.0/8, but a WSGI server of the deployment's (mod_wsgi, uWSGI
    with ``worker.rest.wsgi:application``) listens where it was told; and
    a proxy on this host makes a remote caller look local, save for the
    ``Forwarded``/``X-Forwarded-For`` it adds. A request without an
    address came over a Unix socket (or from within the process): local.
    """

    PROXY_HEADERS = ('HTTP_FORWARDED', 'HTTP_X_FORWARDED_FOR')

    def __init__(self, application):
        self._application = application

    @webob.dec.wsgify
    def __call__(self, req):
        if _is_loopback(req.remote_addr) and not any(
                name in req.environ for name in self.PROXY_HEADERS):
            return req.get_response(self._application)
        return json_error(req, 403, 'retry.forbidden',
                          '[api] auth_strategy = noauth serves callers on '
                          'this host only, never through a proxy')


def _is_loopback(address):
    if not address:
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def json_error(req, status, code, detail):
    """A webob response of one JSON error."""
    response = webob.Response(status=status, content_type='application/json',
                              charset='utf-8')
    response.json_body = errors.body(status, code, detail,
                                     req.environ.get('openstack.request_id'))
    return response
