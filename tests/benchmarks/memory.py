"""Target 5: the daemon's peak memory with a backlog of due rows.

The real ``barbican-retry`` daemon (its default batch size, concurrency
and ``max_pass_seconds``; period 1 s) runs on PostgreSQL. The RSS of its
process tree (psutil, children included) is sampled first with an empty
table (the reference: the daemon at rest), then for a while after the
backlog of due rows is loaded. Its casts go to the real broker, into a
sink queue bound to the worker topic that keeps only the newest 10,000
messages, so the broker's memory stays bounded while the daemon works.

The daemon streams the backlog batch by batch; it cannot drain 1,000,000
rows within the sampling window (that is the drain's business, target
2), so the figures also say how many rows it cast meanwhile.
"""

import datetime
import time

from oslo_utils import timeutils

from tests.benchmarks import broker
from tests.benchmarks import env
from tests.benchmarks import procs
from tests.benchmarks import seed

_MB = 1024.0 * 1024.0


def run(transport_url, workdir, quick, log):
    """All of target 5; returns the raw figures."""
    rows = 100000 if quick else 1000000
    idle_seconds = 3 if quick else 10
    busy_seconds = 8 if quick else 75
    topic = env.new_topic()
    with env.database('postgresql', workdir) as (url, database), \
            broker.sink_queue(env.kombu_url(transport_url), topic,
                              max_length=10000) as depth:
        config = procs.write_config(
            workdir, 'memory', url, transport_url, topic,
            {'scheduler': {'schedule_period_seconds': 1}})
        with procs.scheduler(workdir, config, 'memory-retry') as daemon:
            sampler = procs.RssSampler(daemon.process.pid).start()
            try:
                time.sleep(idle_seconds)
                idle = sampler.peak_since()
                idle_pss = sampler.peak_since(pss=True)
                log('memory: loading %d due rows', rows)
                loaded_at = time.monotonic()
                seed.load(database, rows,
                          timeutils.utcnow() - datetime.timedelta(hours=1),
                          spacing=0.001)
                log('memory: sampling the daemon for %ds', busy_seconds)
                time.sleep(busy_seconds)
            finally:
                sampler.stop()
            left = seed.count_rows(database)
        queued = depth()
    return {
        'rows': rows, 'idle_mb': idle / _MB, 'idle_pss_mb': idle_pss / _MB,
        'peak_mb': sampler.peak_since(loaded_at) / _MB,
        'peak_pss_mb': sampler.peak_since(loaded_at, pss=True) / _MB,
        'processes': [{'pid': pid, 'cmd': cmd, 'peak_rss_mb': peak / _MB}
                      for pid, (cmd, peak) in sampler.processes.items()],
        'dispatched_in_window': rows - left, 'window_seconds': busy_seconds,
        'queued_at_end': queued,
        'samples': [(at - loaded_at, rss / _MB, pss / _MB)
                    for at, rss, pss in sampler.samples],
    }
