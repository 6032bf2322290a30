"""Entry points for oslo-config-generator (``oslo.config.opts``)."""

from oslo_config import cfg

from worker.conf import database
from worker.conf import default
from worker.conf import metrics
from worker.conf import simple_certificate
from worker.conf import worker

_MODULES = (default, worker, simple_certificate, metrics)


def list_opts():
    """Return ``[(group, [opts])]`` for every worker-side group."""
    result = []
    for module in _MODULES:
        result.extend(module.list_opts().items())
    return result


def set_lib_defaults():
    """Apply our defaults to library options before the sample is made."""
    database.register_opts(cfg.CONF)
