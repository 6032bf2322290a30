"""The ``[simple_certificate]`` group of the demonstration plugin."""

from oslo_config import cfg

from worker.conf import groups

simple_certificate_group = cfg.OptGroup(
    'simple_certificate', title='SimpleCertificatePlugin options',
    help='Options of the demonstration certificate plugin.')

simple_certificate_opts = [
    cfg.IntOpt('delay_before_update_seconds',
               default=5, min=0, max=86400,
               mutable=True,
               help='Seconds the SimpleCertificatePlugin waits between '
                    'issuing a certificate request and checking its '
                    'status. The check runs at the first retry-scheduler '
                    'pass after this delay.'),
]


def register_opts(conf):
    """Register the ``[simple_certificate]`` options."""
    groups.register_group_opts(conf, simple_certificate_group,
                               simple_certificate_opts)


def list_opts():
    """Return the options of this module for the sample config."""
    return {simple_certificate_group: simple_certificate_opts}
