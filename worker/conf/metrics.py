"""The ``[metrics]`` group: the optional Prometheus endpoints."""

from oslo_config import cfg

from worker.conf import groups

metrics_group = cfg.OptGroup(
    'metrics', title='Prometheus metrics',
    help='Optional Prometheus endpoints of barbican-retry and '
         'barbican-worker processes.')

metrics_opts = [
    cfg.BoolOpt('enabled',
                default=False,
                help='Serve Prometheus metrics over HTTP at /metrics.'),
    cfg.HostAddressOpt('bind_host',
                       default='127.0.0.1',
                       help='Address the metrics endpoints listen on. The '
                            'default keeps them local to the host.'),
    cfg.PortOpt('scheduler_port',
                default=9464,
                help='Port of barbican-retry\'s metrics endpoint.'),
    cfg.PortOpt('worker_port',
                default=9465,
                help='First port of the barbican-worker endpoints: each '
                     'worker process takes the first free port from this '
                     'one up, so N workers on one host use worker_port to '
                     'worker_port + N - 1.'),
]


def register_opts(conf):
    """Register the ``[metrics]`` options."""
    groups.register_group_opts(conf, metrics_group, metrics_opts)


def list_opts():
    """Return the options of this module for the sample config."""
    return {metrics_group: metrics_opts}
