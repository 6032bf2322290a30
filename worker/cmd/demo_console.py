"""``barbican-retry-demo --console``: the console over the demo's
database, in the demo's process, until Ctrl-C.

``[api] auth_strategy = noauth`` on 127.0.0.1 only (``LoopbackOnly``
refuses any other caller): the local visitor is an administrator of
every project. The demo's worker and retry daemon keep running
meanwhile, so a cancel or a resume from the console takes effect.
Imported only with ``--console``: the plain demo loads no web stack.
"""

from werkzeug import serving

from worker.rest import app as rest_app
from worker.rest import conf as api_conf
from worker.rest import pipeline
from worker import schedule_api

HOST = '127.0.0.1'


def configure(conf, port):
    """Register ``[api]`` on ``conf`` and set the local console's
    options (noauth on 127.0.0.1, no audit middleware)."""
    api_conf.register_opts(conf)
    conf.set_override('auth_strategy', api_conf.NOAUTH, group='api')
    conf.set_override('bind_host', HOST, group='api')
    conf.set_override('bind_port', port, group='api')
    conf.set_override('audit', False, group='api')
    api_conf.check_bind(conf)


def serve(conf, orders, port):
    """Serve the console over ``orders`` (the demo's ``OrderAPI``) on
    127.0.0.1:``port`` until Ctrl-C; print its address first."""
    configure(conf, port)
    schedules = schedule_api.ScheduleAPI(orders.database, conf,
                                         orders=orders)
    application = pipeline.build(conf, rest_app.create_app(conf, orders,
                                                           schedules))
    print('demo: the console is at http://%s:%d/console/ (Ctrl-C stops it)'
          % (HOST, port), flush=True)
    try:
        serving.run_simple(HOST, port, application, threaded=True)
    except KeyboardInterrupt:
        pass
    print('demo: the console stopped', flush=True)
