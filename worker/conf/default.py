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
]


def register_opts(conf):
    """Register the ``[DEFAULT]`` options."""
    conf.register_opts(default_opts)


def list_opts():
    """Return the options of this module for the sample config."""
    return {'DEFAULT': default_opts}
