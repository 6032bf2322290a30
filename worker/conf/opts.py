"""Entry points for oslo-config-generator (``oslo.config.opts``)."""

from oslo_config import cfg
from oslo_db import options as db_options

from worker.conf import api_limits
from worker.conf import database
from worker.conf import default
from worker.conf import keystone_listener
from worker.conf import metrics
from worker.conf import notifications
from worker.conf import order_types
from worker.conf import quota
from worker.conf import resources
from worker.conf import simple_certificate
from worker.conf import tracing
from worker.conf import worker
from worker import rpc

_MODULES = (default, database, worker, simple_certificate, metrics,
            notifications, order_types, resources, tracing, api_limits,
            keystone_listener, quota)


def list_opts():
    """Return ``[(group, [opts])]`` for every worker-side group."""
    result = []
    for module in _MODULES:
        result.extend(module.list_opts().items())
    return result


def set_lib_defaults():
    """Apply our defaults to library options before the sample is made.

    oslo-config-generator prints ``Opt.default``. ``ConfigOpts.set_default``
    (what ``oslo_db.options.set_defaults`` calls) records an override in
    one ConfigOpts only, which the generator never reads.
    """
    cfg.set_defaults(db_options.database_opts,
                     connection=database.DEFAULT_CONNECTION,
                     max_pool_size=database.DEFAULT_MAX_POOL_SIZE)
    rpc.set_defaults()
