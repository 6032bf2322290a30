"""Isolated oslo.config objects for tests."""

from oslo_config import cfg

from scheduler import conf as scheduler_conf
from worker import conf as worker_conf


def make_conf(**overrides):
    """Return a parsed ConfigOpts with every project option registered.

    ``overrides`` maps ``'group.option'`` (or ``'option'`` for DEFAULT) to
    a value.
    """
    conf = cfg.ConfigOpts()
    worker_conf.register_opts(conf)
    scheduler_conf.register_opts(conf)
    conf([], project='barbican-retry')
    for key, value in overrides.items():
        group, _, name = key.rpartition('.')
        conf.set_override(name, value, group or None)
    return conf
