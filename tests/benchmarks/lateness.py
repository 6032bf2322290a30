"""Target 4: how late retries fire, and how K daemons spread their passes.

Rows come due at a steady rate over a window (PostgreSQL); real
``barbican-retry`` daemons cast them to an in-process oslo.messaging RPC
server that records when each cast arrives. Lateness = arrival minus
``retry_at`` (it includes the broker's delivery, so it slightly
overstates the cast time). Pass start times and durations come from the
daemons' own DEBUG log lines ("Pass dispatched ... in Xs", "Pass found
nothing due (Xs)"); a pass that found another daemon's lock logs neither.

One daemon runs with every default but the period: it passes in its slot
and wakes early for rows falling due before it (``min_pass_gap_seconds``);
its bound is ``period x (1 + jitter) + longest pass``. K daemons run with
``min_pass_gap_seconds`` = period, which turns the early wakes off, so
that the gaps show how the slots spread their passes: the worst gap
between consecutive passes is compared to ``period / K``.
"""

import datetime
import statistics
import threading
import time

import oslo_messaging as messaging
from oslo_utils import timeutils

from tests.benchmarks import env
from tests.benchmarks import procs
from tests.benchmarks import seed
from worker import rpc

JITTER = 0.2


class _Arrivals:
    """RPC endpoint recording when each order's cast arrives."""

    target = messaging.Target(version=rpc.RPC_API_VERSION)

    def __init__(self):
        self.at = {}
        self.duplicates = 0
        self._lock = threading.Lock()

    @messaging.expose
    def run_steps(self, ctxt, steps):
        """Record the arrival of each step of a message (RPC 1.1)."""
        now = time.time()
        with self._lock:
            for _, order_id, _ in steps:
                if order_id in self.at:
                    self.duplicates += 1
                else:
                    self.at[order_id] = now


def _percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def measure(transport_url, daemons, period, window, rate, workdir, log,
            options=None):
    """Run ``daemons`` daemons over a window of due rows; returns figures.

    :param options: more ``[scheduler]`` options.
    """
    topic = env.new_topic()
    count = int(window * rate)
    name = 'lateness-k%d' % daemons
    arrivals = _Arrivals()
    server = rpc.get_server(env.transport(transport_url), topic,
                            'brbench-arrivals', [arrivals])
    server.start()
    try:
        with env.database('postgresql', workdir) as (url, database):
            config = procs.write_config(
                workdir, name, url, transport_url, topic,
                {'DEFAULT': {'debug': 'true'},
                 'scheduler': dict(options or {},
                                   schedule_period_seconds=period,
                                   schedule_jitter=JITTER)})
            start = timeutils.utcnow() + datetime.timedelta(seconds=2)
            batch = seed.load(database, count, start, spacing=1.0 / rate)
            runners = [procs.scheduler(workdir, config, '%s-%d' % (name, i))
                       for i in range(daemons)]
            started = [runner.__enter__() for runner in runners]
            try:
                log('lateness: %d daemon(s), period %ds, %d rows over %ds',
                    daemons, period, count, window)
                deadline = (procs.epoch(start) + window +
                            3 * period * (1 + JITTER) + 20)
                while len(arrivals.at) < count and time.time() < deadline:
                    time.sleep(0.2)
                time.sleep(period)  # a few more passes for the gap figures
            finally:
                for runner in reversed(runners):
                    runner.__exit__(None, None, None)
            logs = [daemon.log() for daemon in started]
    finally:
        server.stop()
        server.wait()
    lateness = [arrived - procs.epoch(batch.retry_at(order_id))
                for order_id, arrived in arrivals.at.items()]
    all_passes = sorted(p for text in logs for p in procs.passes(text))
    window_start = procs.epoch(start)
    window_end = window_start + window
    # Gaps only between passes inside the window of due rows: before it
    # the daemons are still taking their random first turns.
    starts = [begin for begin, _, _ in all_passes
              if window_start <= begin <= window_end]
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    durations = [duration for _, duration, _ in all_passes]
    longest = max(durations) if durations else 0.0
    return {
        'daemons': daemons, 'period': period, 'jitter': JITTER,
        'rows': count, 'arrived': len(arrivals.at),
        'duplicates': arrivals.duplicates,
        'lateness': sorted(lateness),
        'p50': statistics.median(lateness) if lateness else None,
        'p99': _percentile(lateness, 0.99) if lateness else None,
        'max': max(lateness) if lateness else None,
        'passes': len(all_passes), 'longest_pass': longest,
        'bound': period * (1 + JITTER) + longest,
        'gaps': gaps, 'worst_gap': max(gaps) if gaps else None,
        'mean_gap': statistics.mean(gaps) if gaps else None,
        'ideal_gap': period / daemons,
    }


def run(transport_url, workdir, quick, log):
    """All of target 4; returns the raw figures."""
    period = 2
    window = 10 if quick else 90
    rate = 25 if quick else 50
    others = 2 if quick else 3
    return {
        'one': measure(transport_url, 1, period, window, rate, workdir, log),
        'many': measure(transport_url, others, period, window, rate,
                        workdir, log, {'min_pass_gap_seconds': period}),
    }
