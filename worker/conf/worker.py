"""The ``[worker]`` group: the RPC worker pool and its retry policy."""

import os

from oslo_config import cfg

from worker.conf import groups

worker_group = cfg.OptGroup(
    'worker', title='Worker pool options',
    help='Options of barbican-worker, the RPC worker pool that processes '
         'orders.')

#: ``max_queued_steps``: its default and the largest value it takes (the
#: burst benchmark's reference runs with the largest: no bound in
#: practice).
MAX_QUEUED_STEPS_DEFAULT = 500
MAX_QUEUED_STEPS_MAX = 1000000

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
                    'scheduler casts to, but for the steps of the order '
                    'types that have a topic of their own ([order_type:T] '
                    'topic, served by barbican-worker --topic T). Every '
                    'process of one deployment must use the same value.'),
    cfg.IntOpt('max_queued_steps',
               default=MAX_QUEUED_STEPS_DEFAULT,
               min=1, max=MAX_QUEUED_STEPS_MAX,
               help='Most steps one barbican-worker process holds received '
                    'from the broker and not yet started. Past it the '
                    'process reads no more messages until one of its '
                    'executor_thread_pool_size threads takes one, and the '
                    'broker keeps the rest ready in the topic\'s queue '
                    'for any worker process: a burst of casts costs each '
                    'process a bounded amount of memory, and nothing is '
                    'dropped. A message counts the steps it carries (one '
                    'for an order created alone, up to 50 when several '
                    'go in one message, as the retry daemon sends them); '
                    'one larger than this waits until nothing else does. '
                    'The messages being run come on top: at most '
                    'executor_thread_pool_size. Lower costs throughput '
                    'once it no longer covers what the threads start '
                    'while the process reads the next messages; see '
                    '"A burst of casts" in doc/install.md. '
                    '[oslo_messaging_rabbit] '
                    'rabbit_qos_prefetch_count bounds the messages the '
                    'broker sends ahead meanwhile. Read at start.'),
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
    cfg.IntOpt('max_step_crashes',
               default=3, min=1, max=1000,
               help='A step whose worker process died while running it '
                    '(it stopped heartbeating: killed, out of memory, a '
                    'crash in a library) is taken back and run again; '
                    'after this many deaths it fails instead, with the '
                    'reason "the worker died N times while running this '
                    'step", and its policy decides what the order does '
                    '(ERROR by default). One poison order cannot take '
                    'the pool down for ever.'),
    cfg.FloatOpt('lease_grace_seconds',
                 default=5.0, min=0.0, max=3600.0,
                 help='How long after a step\'s lease ended the retry '
                      'daemon waits before it takes the step back and '
                      'dispatches it again. Meanwhile the run that holds '
                      'the lease can still write its result, so a run '
                      'about to finish is not run twice. Read by '
                      'barbican-retry.'),
    cfg.FloatOpt('resource_recheck_seconds',
                 default=30.0, min=0.1, max=3600.0,
                 help='A step that could not take a slot of one of its '
                      'resource keys (or a max_running bound) waits for '
                      'a step of that key to end and wake it; it is '
                      'cast again after this long anyway, in case the '
                      'wake was missed (a slot freed while its wait was '
                      'being written).'),
    cfg.IntOpt('max_local_steps',
               default=4, min=0, max=1000,
               mutable=True,
               help='When a worker process writes a result that makes '
                    'further steps of the same order ready, it may claim '
                    'them in that same transaction and run them itself, '
                    'with no message through the broker and no second '
                    'claim (a local continuation). This is the most it '
                    'does so in a row for one order; the next ready step '
                    'is cast as usual, behind the other orders\' steps. '
                    'A process continues no step while messages wait in '
                    'its intake (see max_queued_steps), nor one of a '
                    'topic it does not serve, nor beyond its free '
                    'executor threads. 0 casts every ready step. Higher '
                    'lets one order\'s long chain keep a thread longer '
                    'before others get it; see "Local continuations" in '
                    'doc/developer.md.'),
    cfg.IntOpt('max_child_failures',
               default=5, min=1, max=1000,
               help='barbican-worker stops, exiting 1, once this many of '
                    'its processes exited with an error (or were killed) '
                    'within child_failure_window_seconds: a pool that '
                    'cannot start (a bad transport_url, a database it '
                    'cannot use) ends instead of forking failing '
                    'processes for ever, and systemd restarts it with '
                    'its own back-off. Each failed process is replaced '
                    'until then. Higher tolerates more crashes of a '
                    'running pool. Read at start.'),
    cfg.IntOpt('child_failure_window_seconds',
               default=60, min=1, max=86400,
               help='The window of max_child_failures: failures further '
                    'apart than this never add up to stopping the pool. '
                    'Read at start.'),
    cfg.FloatOpt('pause_refresh_seconds',
                 default=2.0, min=0.0, max=300.0,
                 help='While nothing is paused, a worker process looks '
                      'for a new pause at most this often (one small read '
                      'of the pauses table), so that a claim costs nothing '
                      'more at rest: a pause set then holds the steps '
                      'claimed from this long after it at the latest. '
                      'While something is paused, every claim reads the '
                      'pauses that may hold its steps. 0 reads at every '
                      'claim. See "Pausing and resuming" in '
                      'doc/operations.md.'),
    cfg.FloatOpt('pause_recheck_seconds',
                 default=60.0, min=1.0, max=86400.0,
                 help='A step held by a pause waits for the unpause to '
                      'wake it; it is cast again after this long anyway, '
                      'in case the wake was missed (a pause lifted while '
                      'the step\'s wait was being written). Higher costs '
                      'fewer claims of paused steps; lower finds a missed '
                      'wake sooner.'),
]


#: Options of the ``barbican-worker`` command line only: what one pool of
#: workers serves is the business of its unit, not of the configuration
#: file every process shares.
cli_opts = [
    cfg.StrOpt('topic',
               help='The RPC topic these workers serve instead of [worker] '
                    'topic: that of the order types whose [order_type:T] '
                    'topic it is (several types may share one). The steps '
                    'they cast still go to their own types\' topics, and '
                    'deliveries to [worker] topic. Each topic set on an '
                    'order type needs at least one worker started with '
                    'it.'),
]


def register_cli_opts(conf):
    """Register ``barbican-worker``'s command-line options (``--topic``)."""
    conf.register_cli_opts(cli_opts)


def register_opts(conf):
    """Register the ``[worker]`` options."""
    groups.register_group_opts(conf, worker_group, worker_opts)


def list_opts():
    """Return the options of this module for the sample config."""
    return {worker_group: worker_opts}
