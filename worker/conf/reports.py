"""oslo.reports' ``[oslo_reports]`` options: where and when the Guru
Meditation Reports of barbican-worker and barbican-retry are written
(``worker.common.reports`` sets their trigger up).

Registered here, with every other group the daemons read, so that the
configuration depends on nothing above it. The sample configuration
lists them under oslo.reports' own namespace (``oslo.reports`` in
``etc/oslo-config-generator/barbican-retry.conf``).
"""

from oslo_reports import opts as reports_opts


def register_opts(conf):
    """Register ``[oslo_reports]`` on ``conf``."""
    reports_opts.set_defaults(conf)
