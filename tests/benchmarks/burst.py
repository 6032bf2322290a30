"""Issue 29, item 5: a burst of single-step orders cast all at once.

N orders of the one-step test type (``tests/plugin.py: SingleStep``) are
created on PostgreSQL, then their first steps are cast, one message per
order as an API server would, from ``CAST_THREADS`` threads at once, to
``barbican-worker`` running 2 processes (the default ``[worker]
max_queued_steps``). The figures:

- orders/s to ACTIVE: N / (last order ACTIVE - first cast);
- lost: orders not ACTIVE at the end. No retry daemon runs, so a cast
  that a worker took and lost would leave its order PENDING: nothing
  hides a loss behind a re-dispatch;
- the largest worker RSS: each worker process's peak (``VmHWM`` of
  ``/proc/PID/status``, read before it stops), beside the pool parent's
  and the workers' peak once they serve, before the first cast;
- the largest backlog the broker held on the topic's queue meanwhile
  (messages ready, sampled): where the burst waited.

The same burst runs first with the bound lifted (``max_queued_steps`` at
its maximum and ``rabbit_qos_prefetch_count`` = 0, the worker of before:
every message taken into memory as it comes): the reference beside each
figure.
"""

import concurrent.futures
import time

from amqp import exceptions as amqp_exceptions
from oslo_utils import timeutils
import psutil

from tests.benchmarks import broker
from tests.benchmarks import env
from tests.benchmarks import procs
from tests.benchmarks import worker_pool
from tests.functional import processes
from tests import plugin
from worker.conf import worker as worker_conf
from worker.order_types import base

CAST_THREADS = 8
WORKER_PROCESSES = 2
#: The burst of ``--quick`` (and of the suite's test) and of the full run.
QUICK_ORDERS = 5000
FULL_ORDERS = 100000
#: Orders created per transaction (a burst of 100,000 in one would hold
#: every row object of it in the benchmark's memory at once).
_CREATE_CHUNK = 5000
#: ``max_queued_steps`` and prefetch of the reference: no bound.
UNBOUNDED = {'worker': {'max_queued_steps': worker_conf.MAX_QUEUED_STEPS_MAX},
             'oslo_messaging_rabbit': {'rabbit_qos_prefetch_count': 0}}


def single_step_workflow():
    """The ``Workflow`` of the one-step test type."""
    return base.check('single_step', plugin.SingleStep)


def create(database, count):
    """Create ``count`` single-step orders; their casts, one per order."""
    messages = []
    workflow = single_step_workflow()
    for start in range(0, count, _CREATE_CHUNK):
        messages.extend(worker_pool.create_orders(
            database, workflow, min(_CREATE_CHUNK, count - start)))
    return messages


def measure(transport_url, workdir, count, log, options=None, name='burst'):
    """Cast a burst of ``count`` single-step orders to a running pool, on
    a PostgreSQL database of its own (``measure_on``)."""
    with env.database('postgresql', workdir) as (url, database):
        return measure_on(url, database, transport_url, workdir, count, log,
                          options, name)


def measure_on(url, database, transport_url, workdir, count, log,
               options=None, name='burst'):
    """Cast a burst of ``count`` single-step orders to a running pool.

    :param url: the empty, migrated ``database``'s URL.
    :param options: ``{group: {name: value}}`` added to the workers'
        config (``UNBOUNDED`` for the reference).
    :returns: the figures (``lost`` is what the issue asks to be 0).
    """
    topic = env.new_topic()
    merged = {'worker': {'workers': WORKER_PROCESSES}}
    for group, values in (options or {}).items():
        merged.setdefault(group, {}).update(values)
    config = procs.write_config(workdir, name, url, transport_url, topic,
                                merged)
    log('%s: creating %d single-step orders', name, count)
    messages = create(database, count)
    api = env.worker_api(transport_url, topic)
    plugins = processes.plugin_environment(
        workdir / (name + '-plugins'), workdir / (name + '-calls.jsonl'))
    with procs.workers(workdir, config, WORKER_PROCESSES,
                       name + '-workers', environ=plugins) as workers:
        log('%s: casting %d messages from %d threads', name,
            len(messages), CAST_THREADS)
        serving = _peak_rss_mb(workers.process.pid)
        depth = _QueueDepth(env.kombu_url(transport_url), topic).start()
        first_cast = timeutils.utcnow()
        started = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(CAST_THREADS) as pool:
            list(pool.map(api.run_steps, messages))
        cast_seconds = time.monotonic() - started
        done, last = procs.wait_for_status(
            database, '', count, timeout=120 + count / 50.0)
        depth.stop()
        peaks = _peak_rss_mb(workers.process.pid)
        dropped = procs.count_in_log(workers, 'Dropped ')
    seconds = (last - first_cast).total_seconds() if last else float('nan')
    return {
        'orders': count, 'active': done, 'lost': count - done,
        'seconds': seconds, 'rate': done / seconds if last else 0.0,
        'cast_seconds': cast_seconds, 'cast_rate': count / cast_seconds,
        'worker_mb': max(peaks['workers'] or [0.0]),
        'workers_mb': peaks['workers'], 'parent_mb': peaks['parent'],
        'serving_mb': max(serving['workers'] or [0.0]),
        'peak_queue_depth': depth.peak, 'dropped_lines': dropped,
        'options': merged,
    }


def _peak_rss_mb(parent_pid):
    """The peak RSS (``VmHWM``) in MB of the pool's parent and of each of
    its worker processes."""
    parent = psutil.Process(parent_pid)
    return {'parent': _vm_hwm_mb(parent_pid),
            'workers': [_vm_hwm_mb(child.pid)
                        for child in parent.children(recursive=True)]}


def _vm_hwm_mb(pid):
    """``VmHWM`` of ``pid`` in MB: the most resident memory it had."""
    with open('/proc/%d/status' % pid) as status:
        for line in status:
            if line.startswith('VmHWM:'):
                return int(line.split()[1]) / 1024.0
    return 0.0


class _QueueDepth:
    """Samples how many messages the topic's queue holds ready, in a
    thread, and keeps the largest (a passive declare: no management
    plugin needed)."""

    def __init__(self, kombu_url, topic, interval=0.2):
        self._kombu_url = kombu_url
        self._topic = topic
        self._interval = interval
        self._pool = concurrent.futures.ThreadPoolExecutor(1)
        self._stopped = False
        self._future = None
        self.peak = 0

    def start(self):
        """Start sampling."""
        self._future = self._pool.submit(self._run)
        return self

    def _run(self):
        with broker.connection(self._kombu_url, confirm=False) as conn:
            channel = conn.channel()
            while not self._stopped:
                try:
                    _, ready, _ = channel.queue_declare(
                        queue=self._topic, passive=True)
                except amqp_exceptions.NotFound:
                    channel = conn.channel()  # the failed declare closed it
                    ready = 0
                self.peak = max(self.peak, ready)
                time.sleep(self._interval)

    def stop(self):
        """Stop sampling."""
        self._stopped = True
        self._future.result()
        self._pool.shutdown()


def run(transport_url, workdir, quick, log):
    """The burst with the default bound, beside the same burst unbounded."""
    count = QUICK_ORDERS if quick else FULL_ORDERS
    return {'orders': count,
            'max_queued_steps': worker_conf.MAX_QUEUED_STEPS_DEFAULT,
            'unbounded': measure(transport_url, workdir, count, log,
                                 UNBOUNDED, name='burst-unbounded'),
            'bounded': measure(transport_url, workdir, count, log)}
