"""The ``[api]`` group: how ``barbican-retry-api`` listens and who it
trusts."""

import ipaddress

from oslo_config import cfg

from worker.conf import groups

KEYSTONE = 'keystone'
NOAUTH = 'noauth'

api_group = cfg.OptGroup(
    'api', title='The REST API (barbican-retry-api)',
    help='The HTTP server of orders: where it listens, how many processes '
         'serve it and how callers are authenticated (doc/rest.md).')

api_opts = [
    cfg.HostAddressOpt(
        'bind_host', default='127.0.0.1',
        help='Address barbican-retry-api listens on. With auth_strategy '
             '= noauth it must be in 127.0.0.0/8.'),
    cfg.PortOpt(
        'bind_port', default=9312,
        help='TCP port barbican-retry-api listens on.'),
    cfg.IntOpt(
        'workers', default=2, min=1, max=256,
        help='Processes of the production server (gunicorn pre-forked '
             'workers), 1 to 256. Each holds its own database pool of '
             '[database] max_pool_size connections.'),
    cfg.IntOpt(
        'threads', default=16, min=1, max=256,
        help='Threads of each production-server process (gunicorn '
             '"gthread" workers), 1 to 256: the requests one process '
             'serves at once. A create spends most of its time waiting '
             'for the database\'s commit and the broker\'s confirm, '
             'holding its thread: workers x threads bounds the creates '
             'in flight. Each thread may hold a database connection: '
             'keep it within [database] max_pool_size + max_overflow.'),
    cfg.StrOpt(
        'auth_strategy', default=KEYSTONE, choices=(KEYSTONE, NOAUTH),
        help='keystone: callers present a Keystone token, checked by '
             'keystonemiddleware auth_token ([keystone_authtoken]). noauth: '
             'for local development only; the project and roles are taken '
             'from the X-Project-Id and X-Roles headers as sent; the '
             'server refuses to start on an address outside 127.0.0.0/8 '
             'and refuses a request from another host or relayed by a '
             'proxy.'),
    cfg.BoolOpt(
        'audit', default=True,
        help='Record every state-changing request (POST, PUT, PATCH, '
             'DELETE) as a CADF event with keystonemiddleware\'s audit '
             'middleware, sent by [oslo_messaging_notifications] (or '
             '[audit_middleware_notifications]).'),
    cfg.StrOpt(
        'audit_map_file', default='/etc/barbican-retry/api_audit_map.conf',
        help='The audit middleware\'s map of paths to CADF targets '
             '(etc/barbican-retry/api_audit_map.conf). Read with audit = '
             'true.'),
    cfg.IntOpt(
        'default_page_size', default=100, min=1, max=1000,
        help='Orders GET /v1/orders returns without a limit (1 to 1000).'),
    cfg.URIOpt(
        'console_auth_url',
        help='The Keystone v3 endpoint (e.g. http://keystone:5000/v3) the '
             'operator console (/console) logs its users in with. Unset, '
             'the console refuses logins; with auth_strategy = noauth it '
             'is not used (every local visitor is an administrator).'),
    cfg.IntOpt(
        'console_refresh_seconds', default=5, min=1, max=3600,
        help='Seconds between two reads of the console\'s live pages (the '
             'overview, an order), 1 to 3600: each read costs a few '
             'indexed queries per open page.'),
]


class RefusedBind(ValueError):
    """noauth asked on an address other callers could reach."""


def register_opts(conf):
    """Register the ``[api]`` options."""
    groups.register_group_opts(conf, api_group, api_opts)


def list_opts():
    """Return ``[(group, [opts])]`` for the sample config (the
    ``oslo.config.opts`` entry point)."""
    return [(api_group, api_opts)]


def check_bind(conf):
    """Refuse ``noauth`` on an address outside 127.0.0.0/8.

    :raises RefusedBind: naming the options.
    """
    if conf.api.auth_strategy != NOAUTH:
        return
    try:
        address = ipaddress.ip_address(conf.api.bind_host)
    except ValueError:
        address = None
    if address is None or address not in ipaddress.ip_network(
            '127.0.0.0/8'):
        raise RefusedBind(
            '[api] auth_strategy = noauth trusts the X-Project-Id and '
            'X-Roles headers of any caller: [api] bind_host must be an '
            'address in 127.0.0.0/8, not %r' % conf.api.bind_host)
