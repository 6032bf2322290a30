"""Options in ``[DEFAULT]`` shared by every barbican-retry process."""

import socket

from oslo_config import cfg

default_opts = [
    cfg.StrOpt('host',
               default=socket.getfqdn(),
               sample_default='<server-hostname.example.com>',
               help='Name of this host as recorded in lock rows and logs. '
                    'Must be unique among the hosts that share one '
                    'database.'),
    cfg.IntOpt('service_down_time',
               default=60, min=3, max=3600,
               help='Seconds without a heartbeat after which a '
                    'barbican-worker or barbican-retry process is '
                    'considered dead: the retry scheduler takes back the '
                    'orders it was working on and dispatches them again. '
                    'Must be at least 3 times report_interval.'),
    cfg.IntOpt('report_interval',
               default=10, min=1, max=1200,
               help='Seconds between two heartbeats of a process. At most '
                    'a third of service_down_time, so that one late '
                    'heartbeat never makes a live process look dead.'),
]


def register_opts(conf):
    """Register the ``[DEFAULT]`` options."""
    conf.register_opts(default_opts)


def validate(conf):
    """Check that heartbeats come at least 3 times per service_down_time.

    :raises ValueError: naming the options.
    """
    if conf.report_interval * 3 > conf.service_down_time:
        raise ValueError(
            '[DEFAULT] report_interval (%d) must be at most a third of '
            '[DEFAULT] service_down_time (%d)'
            % (conf.report_interval, conf.service_down_time))


def list_opts():
    """Return the options of this module for the sample config."""
    return {'DEFAULT': default_opts}
