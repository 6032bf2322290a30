"""Target 6: certificate orders completed per second, 1 vs 2 workers.

A whole order as the blueprint runs it, on PostgreSQL and RabbitMQ: the
benchmark casts ``process_type_order`` for N PENDING orders (as an API
server would after creating them), the worker asks the simple plugin,
which requests a status check after ``delay_before_update_seconds`` = 0;
the ``barbican-retry`` daemon (period 1 s) casts the check and the worker
completes the order. Rate = N / (last order ACTIVE - first cast). Run with
1 and then 2 worker processes, each on a fresh database.

The machine's CPU use over the same interval is recorded beside each
figure: a second worker process can only add what the first left idle of
the CPUs that the broker, the database and the daemon share with it.
"""

import concurrent.futures
import os
import time

import psutil

from oslo_utils import timeutils

from tests.benchmarks import env
from tests.benchmarks import procs
from tests.benchmarks import seed

CAST_THREADS = 8


def measure(transport_url, count, worker_processes, workdir, log):
    """Complete ``count`` orders with ``worker_processes``; figures."""
    topic = env.new_topic()
    name = 'pool-%d' % worker_processes
    with env.database('postgresql', workdir) as (url, database):
        config = procs.write_config(
            workdir, name, url, transport_url, topic,
            {'scheduler': {'schedule_period_seconds': 1},
             'worker': {'workers': worker_processes},
             'simple_certificate': {'delay_before_update_seconds': 0}})
        batch = seed.load(database, count, timeutils.utcnow(),
                          step='process_type_order', retries=False)
        api = env.worker_api(transport_url, topic)
        with procs.workers(workdir, config, worker_processes,
                           name + '-workers') as workers, \
                procs.scheduler(workdir, config, name + '-retry'):
            log('worker pool: %d orders, %d worker process(es)', count,
                worker_processes)
            first_cast = timeutils.utcnow()
            started = time.monotonic()
            cpu_before = psutil.cpu_times()
            with concurrent.futures.ThreadPoolExecutor(CAST_THREADS) as pool:
                list(pool.map(
                    lambda index: api.process_type_order(
                        batch.order_id(index), 0),
                    range(1, count + 1)))
            cast_seconds = time.monotonic() - started
            done, last = procs.wait_for_status(
                database, batch.prefix, count, timeout=60 + count / 10.0)
            busy = _busy_share(cpu_before, psutil.cpu_times())
            dropped = procs.count_in_log(workers, 'Dropped ')
    seconds = (last - first_cast).total_seconds() if last else float('nan')
    return {
        'processes': worker_processes, 'orders': count, 'done': done,
        'seconds': seconds, 'rate': done / seconds if last else 0.0,
        'cast_seconds': cast_seconds, 'dropped': dropped,
        'cpu_busy': busy, 'cpus': len(os.sched_getaffinity(0)),
    }


def _busy_share(before, after):
    """Share of the machine's CPU time spent busy between two readings."""
    total = sum(after) - sum(before)
    idle = (after.idle - before.idle) + (getattr(after, 'iowait', 0) -
                                         getattr(before, 'iowait', 0))
    return 1.0 - idle / total if total else 0.0


def run(transport_url, workdir, quick, log):
    """All of target 6; returns the raw figures."""
    count = 400 if quick else 3000
    return {'orders': count,
            'one': measure(transport_url, count, 1, workdir, log),
            'two': measure(transport_url, count, 2, workdir, log)}
