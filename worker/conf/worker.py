"""The ``[worker]`` group: the RPC worker pool and its retry policy."""

import os

from oslo_config import cfg

from worker.conf import groups

worker_group = cfg.OptGroup(
    'worker', title='Worker pool options',
    help='Options of barbican-worker, the RPC worker pool that processes '
         'orders.')

worker_opts = [
    cfg.IntOpt('workers',
               default=os.cpu_count() or 1,
               sample_default='<number of CPUs>',
               min=1, max=256,
               help='Number of barbican-worker processes to fork. Each is '
                    'an RPC server on [worker] topic.'),
    cfg.StrOpt('topic',
               default='barbican_retry_worker',
               help='RPC topic the workers listen on and the retry '
                    'scheduler casts to. Every process of one deployment '
                    'must use the same value.'),
    cfg.StrOpt('certificate_plugin',
               default='simple_certificate',
               help='Name of the certificate plugin, an entry point in the '
                    'barbican_retry.certificate.plugins namespace.'),
    cfg.IntOpt('max_unavailable_retries',
               default=10, min=0, max=1000,
               mutable=True,
               deprecated_for_removal=True,
               deprecated_reason='Replaced by [step:TYPE.STEP] '
                                 'max_attempts; while set, applied to '
                                 'every step as max_attempts = value + 1.',
               help='How many times in a row a step is retried after its '
                    'plugin reports the remote service unavailable.'),
    cfg.FloatOpt('unavailable_backoff_base_seconds',
                 default=2.0, min=0.0, max=3600.0,
                 mutable=True,
                 deprecated_for_removal=True,
                 deprecated_reason='Replaced by [step:TYPE.STEP] '
                                   'backoff_base_seconds; while set, '
                                   'applied to every step.',
                 help='Base of the back-off between retries of a step.'),
    cfg.FloatOpt('unavailable_backoff_max_seconds',
                 default=600.0, min=0.0, max=86400.0,
                 mutable=True,
                 deprecated_for_removal=True,
                 deprecated_reason='Replaced by [step:TYPE.STEP] '
                                   'backoff_max_seconds; while set, '
                                   'applied to every step.',
                 help='Upper bound of one back-off delay.'),
]


def register_opts(conf):
    """Register the ``[worker]`` options."""
    groups.register_group_opts(conf, worker_group, worker_opts)


def list_opts():
    """Return the options of this module for the sample config."""
    return {worker_group: worker_opts}
