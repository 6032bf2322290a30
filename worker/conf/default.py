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
    cfg.FloatOpt('max_clock_offset_seconds',
                 default=10.0, min=0.5, max=3600,
                 help='Every process measures its clock against the '
                      'database server\'s at each heartbeat and corrects '
                      'its times by the difference. Beyond this many '
                      'seconds it also logs an error at each heartbeat '
                      '(fix the host\'s NTP), and a retry daemon that far '
                      'off takes back no step and clears no lock until its '
                      'clock is fixed. Shown in "service list" and as the '
                      'metric barbican_retry_clock_offset_seconds.'),
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
