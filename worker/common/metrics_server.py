"""The Prometheus endpoint of a process, worker or retry daemon.

Each process has a registry of its own and serves it on its own port
(``[metrics]``): processes share nothing, so a killed one takes only its
own counters with it.
"""

import errno

from oslo_log import log as logging
import prometheus_client

LOG = logging.getLogger(__name__)


def export_clock_offset(registry, clock):
    """Export ``clock``'s last measured offset (a ``DatabaseClock``)."""
    gauge = prometheus_client.Gauge(
        'barbican_retry_clock_offset_seconds',
        'Seconds the database server\'s clock is ahead of this host\'s '
        '(negative: behind), measured at the last heartbeat; this '
        'process corrects its times by it.', registry=registry)
    gauge.set_function(lambda: clock.offset_seconds or 0.0)


def serve(conf, registry, first_port, tries=1):
    """Serve ``registry`` on the first free port from ``first_port``.

    Returns the port, or None when metrics are disabled or no port of the
    range is free (logged; the process runs on without metrics).
    """
    if not conf.metrics.enabled:
        return None
    for port in range(first_port, first_port + tries):
        try:
            prometheus_client.start_http_server(
                port, addr=conf.metrics.bind_host, registry=registry)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            continue
        LOG.info('Metrics served on http://%s:%d/metrics',
                 conf.metrics.bind_host, port)
        return port
    LOG.error('No free metrics port in %d-%d; running without metrics',
              first_port, first_port + tries - 1)
    return None
