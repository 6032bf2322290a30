"""Running ``barbican-retry-api``: gunicorn, a WSGI server's
``application``, or a development server.

- ``barbican-retry-api --config-file FILE`` (``main``) runs gunicorn
  (pre-forked workers: ``[api] workers``) on ``[api] bind_host`` and
  ``bind_port``. Each worker builds its own database pool and RPC
  transport after the fork.
- ``barbican-retry-api --config-file FILE --development`` runs Werkzeug's
  server in one process, for local work.
- ``worker.rest.wsgi:application`` is the WSGI callable for mod_wsgi or
  uWSGI: its configuration file comes from ``BARBICAN_RETRY_CONFIG_FILE``
  or ``--config-file`` in ``sys.argv``; it is built on first use, in the
  process that serves it.
"""

import os
import sys

from gunicorn.app import base as gunicorn_base
from oslo_config import cfg
from werkzeug import serving

from worker import api
from worker.api import schedules as schedule_api
from worker import conf as worker_conf
from worker.rest import app as rest_app
from worker.rest import conf as api_conf
from worker.rest import pipeline

PROG = 'barbican-retry-api'
CONFIG_VARIABLE = 'BARBICAN_RETRY_CONFIG_FILE'

_cli_opts = [
    cfg.BoolOpt('development', default=False,
                help='Serve with Werkzeug\'s development server, in one '
                     'process, instead of gunicorn. For local work only.'),
]


def _register_cli(conf):
    conf.register_cli_opts(_cli_opts)


def load_config(argv):
    """A ``ConfigOpts`` parsed from ``argv``, its ``[api]`` checked.

    :raises SystemExit: an invalid configuration, or ``noauth`` on an
        address outside 127.0.0.0/8.
    """
    conf = cfg.ConfigOpts()
    worker_conf.load(conf, argv, PROG,
                     extra_register=(api_conf.register_opts, _register_cli))
    try:
        api_conf.check_bind(conf)
    except api_conf.RefusedBind as exc:
        raise SystemExit('%s: %s' % (PROG, exc))
    return conf


def build(conf):
    """The WSGI application over the APIs ``conf`` names (its database
    and broker), behind the middleware."""
    orders = api.OrderAPI.from_config(conf)
    schedules = schedule_api.ScheduleAPI(orders.database, conf,
                                         orders=orders)
    return pipeline.build(conf, rest_app.create_app(conf, orders,
                                                    schedules))


class _Gunicorn(gunicorn_base.BaseApplication):
    """gunicorn over ``build``: the master parses the configuration,
    each worker builds the application after the fork."""

    def __init__(self, conf):
        self._conf = conf
        super().__init__()

    def load_config(self):
        """gunicorn's settings from ``[api]``."""
        group = self._conf.api
        for name, value in (
                ('bind', '%s:%d' % (_host(group.bind_host), group.bind_port)),
                ('workers', group.workers), ('threads', group.threads),
                ('worker_class', 'gthread'), ('proc_name', PROG),
                ('accesslog', '-')):
            self.cfg.set(name, value)

    def load(self):
        """The application of one worker."""
        return build(self._conf)


def _host(address):
    """An IPv6 address in brackets, as gunicorn's ``bind`` wants it."""
    return '[%s]' % address if ':' in address else address


def main(argv=None):
    """``barbican-retry-api``: gunicorn, or ``--development``."""
    conf = load_config(sys.argv[1:] if argv is None else argv)
    if conf.development:
        serving.run_simple(conf.api.bind_host, conf.api.bind_port,
                           build(conf), threaded=True)
        return 0
    _Gunicorn(conf).run()
    return 0


def _config_argv():
    """The arguments of ``application``: the file the environment
    names, or the ``--config-file`` options of ``sys.argv``."""
    path = os.environ.get(CONFIG_VARIABLE)
    if path:
        return ['--config-file', path]
    argv = sys.argv[1:]
    found = []
    for index, item in enumerate(argv):
        if item == '--config-file' and index + 1 < len(argv):
            found += ['--config-file', argv[index + 1]]
        elif item.startswith('--config-file='):
            found.append(item)
    return found


_application = None


def __getattr__(name):
    # The module's ``application``, built on first use rather than at
    # import: importing this module (for ``main``) parses nothing.
    global _application
    if name != 'application':
        raise AttributeError(name)
    if _application is None:
        _application = build(load_config(_config_argv()))
    return _application


if __name__ == '__main__':
    sys.exit(main())
