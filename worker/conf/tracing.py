"""The ``[tracing]`` group: OpenTelemetry traces of orders (doc/tracing.md).

See ``worker.tracing``.
"""

import importlib
import urllib.parse

from oslo_config import cfg

from worker.conf import groups

tracing_group = cfg.OptGroup(
    'tracing', title='Traces of orders (OpenTelemetry)',
    help='With tracing enabled, an order\'s life is one trace: its '
         'creation, every cast of its steps, each step\'s claim, run and '
         'result on the workers, the retry daemon\'s dispatch of its retry '
         'rows and each webhook request. Spans are exported in batches '
         'over OTLP/HTTP (protobuf); the W3C traceparent of the trace '
         'travels with the RPC messages, is kept with the order and is '
         'sent on each webhook request.')

tracing_opts = [
    cfg.BoolOpt('enabled',
                default=False,
                help='Record and export traces. Needs the OpenTelemetry '
                     'packages of the extra barbican-retry[tracing]; a '
                     'process started with it on without them stops at '
                     'start, naming this option and the extra. Off: the '
                     'OpenTelemetry SDK is not even imported. Read at the '
                     'start of each process (a restart applies a change).'),
    cfg.URIOpt('otlp_endpoint',
               default='http://127.0.0.1:4318/v1/traces',
               schemes=['http', 'https'],
               help='The OTLP/HTTP traces URL that spans are POSTed to '
                    '(an OpenTelemetry Collector\'s, Jaeger\'s or '
                    'Tempo\'s), path included, e.g. '
                    'http://127.0.0.1:4318/v1/traces. An endpoint that '
                    'does not answer loses spans (logged), never a step.'),
    cfg.FloatOpt('sample_ratio',
                 default=1.0, min=0.0, max=1.0,
                 help='The share of new traces recorded, from 0.0 (none) '
                      'to 1.0 (all). Parent-based: a request that comes '
                      'with a sampled traceparent is always recorded, one '
                      'that comes with an unsampled one never; an order '
                      'keeps the decision of its creation for its whole '
                      'life.'),
    cfg.StrOpt('service_name',
               help='The "service.name" resource attribute of the spans. '
                    'Default: the program\'s name (barbican-worker, '
                    'barbican-retry, barbican-retry-manage, or the '
                    'script that uses the Python API).'),
    cfg.FloatOpt('export_timeout_seconds',
                 default=10.0, min=0.1, max=300.0,
                 help='How long one export request may take before it is '
                      'given up (its spans are lost, and logged). Exports '
                      'run in a thread of their own: a step never waits '
                      'for them.'),
    cfg.IntOpt('max_queue_size',
               default=2048, min=1, max=1000000,
               help='Spans kept in memory waiting for export; past it, new '
                    'spans are dropped (an unreachable endpoint costs '
                    'memory up to this bound, not steps).'),
    cfg.FloatOpt('schedule_delay_seconds',
                 default=1.0, min=0.01, max=60.0,
                 help='How often the waiting spans are exported, at most '
                      '(sooner when max_export_batch_size are waiting).'),
    cfg.IntOpt('max_export_batch_size',
               default=512, min=1, max=100000,
               help='The most spans in one export request; at most '
                    'max_queue_size.'),
]


def register_opts(conf):
    """Register the ``[tracing]`` options."""
    groups.register_group_opts(conf, tracing_group, tracing_opts)


#: The distribution of each module ``worker.tracing`` imports with
#: tracing on: the extra ``[tracing]`` installs them.
TRACING_MODULES = (
    ('opentelemetry.trace', 'opentelemetry-api'),
    ('opentelemetry.sdk', 'opentelemetry-sdk'),
    ('opentelemetry.exporter.otlp.proto.http',
     'opentelemetry-exporter-otlp-proto-http'),
)


def missing_packages():
    """The OpenTelemetry distributions tracing needs and this Python cannot
    import (called with tracing on only: it imports them)."""
    missing = []
    for module, distribution in TRACING_MODULES:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(distribution)
    return missing


def validate(conf):
    """Check what one option alone cannot.

    :raises ValueError: naming the option.
    """
    group = conf.tracing
    if not group.enabled:
        return
    missing = missing_packages()
    if missing:
        raise ValueError('[tracing] enabled = true needs the OpenTelemetry '
                         "packages of the extra barbican-retry[tracing] "
                         "(pip install 'barbican-retry[tracing]'); missing: "
                         '%s' % ', '.join(missing))
    parsed = urllib.parse.urlsplit(group.otlp_endpoint or '')
    if parsed.scheme not in ('http', 'https') or not parsed.hostname:
        raise ValueError('[tracing] otlp_endpoint must be an http:// or '
                         'https:// URL with a host when tracing is enabled, '
                         'not %r' % group.otlp_endpoint)
    if group.max_export_batch_size > group.max_queue_size:
        raise ValueError('[tracing] max_export_batch_size (%d) must not be '
                         'more than max_queue_size (%d)'
                         % (group.max_export_batch_size,
                            group.max_queue_size))


def list_opts():
    """Return the options of this module for the sample config."""
    return {tracing_group: tracing_opts}
