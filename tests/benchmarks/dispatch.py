"""Target 1: rows cast per second by one pass, against raw kombu.

One pass is ``scheduler.manager.RetryManager.run_once`` with the product's
own ``worker.rpcapi.WorkerAPI`` on a real RabbitMQ transport, over due rows
bulk-loaded into SQLite or PostgreSQL. The casts land in a sink queue bound
to the worker topic (no worker consumes them, so the broker's queue, not a
consumer, is the far end, as for the kombu reference); the rows in the
queued messages (``run_steps`` carries several) prove every row was
delivered. The figure is rows per second, the target's unit; the messages
they took are recorded beside it.

References measured in the same run: kombu confirmed publish on one
connection (the target's yardstick), and oslo.messaging cast loops on
1..N threads sharing one client (how fast the product's RPC client can go
without any database work).
"""

import concurrent.futures
import datetime
import statistics
import time

from oslo_utils import timeutils

from scheduler import manager
from tests.benchmarks import broker
from tests.benchmarks import env
from tests.benchmarks import seed
from tests import config
from worker import values


def scheduler_conf(**scheduler_options):
    """An isolated config with ``[scheduler]`` overrides (defaults else)."""
    return config.make_conf(**{'scheduler.%s' % name: value
                               for name, value in scheduler_options.items()})


def _pass(database, api, conf, count):
    now = timeutils.utcnow()
    seed.load(database, count, now - datetime.timedelta(seconds=60),
              spacing=0.001)
    retry_manager = manager.RetryManager(conf, database, api)
    started = time.perf_counter()
    result = retry_manager.run_once(timeutils.utcnow())
    seconds = time.perf_counter() - started
    return result, seconds


def pass_rate(backend, transport_url, count, workdir, cast_concurrency=None):
    """Run one pass over ``count`` due rows; returns its figures.

    A small pass first warms the connection pool, as a running daemon's
    pool is warm from its earlier passes.
    """
    options = {}
    if cast_concurrency:
        options['cast_concurrency'] = cast_concurrency
    conf = scheduler_conf(**options)
    topic = env.new_topic()
    api = env.worker_api(transport_url, topic)
    kombu_url = env.kombu_url(transport_url)
    with env.database(backend, workdir) as (_, database), \
            broker.sink_queue(kombu_url, topic) as depth:
        _pass(database, api, conf, 4 * conf.scheduler.cast_concurrency)
        warm = _settled(depth)
        result, seconds = _pass(database, api, conf, count)
        messages = _settled(depth) - warm
        broker.rows_in_sink(kombu_url, topic, warm)
        delivered = broker.rows_in_sink(kombu_url, topic, messages)
    return {
        'backend': backend, 'rows': count, 'seconds': seconds,
        'rate': result.dispatched / seconds, 'messages': messages,
        'dispatched': result.dispatched, 'delivered': delivered,
        'cast_failures': result.cast_failures,
        'cast_concurrency': conf.scheduler.cast_concurrency,
        'batch_size': conf.scheduler.batch_size,
    }


def _settled(depth):
    """The queue's depth once it stopped growing (confirmed casts land
    before the pass returns; this only absorbs the broker's bookkeeping)."""
    last = depth()
    while True:
        time.sleep(0.2)
        now = depth()
        if now == last:
            return now
        last = now


def oslo_cast_rate(transport_url, count, threads):
    """``count`` casts from ``threads`` threads sharing one WorkerAPI."""
    topic = env.new_topic()
    api = env.worker_api(transport_url, topic)
    kombu_url = env.kombu_url(transport_url)
    per_thread = count // threads

    def cast(order_id):
        api.run_steps([values.StepRef('check_certificate_status',
                                      order_id, 0)])

    def loop(first):
        for index in range(first, first + per_thread):
            cast('b%012d' % index)

    with broker.sink_queue(kombu_url, topic) as depth, \
            concurrent.futures.ThreadPoolExecutor(threads) as pool:
        # Warm-up: one connection per thread, as in a running daemon.
        list(pool.map(lambda _: cast('warm'), range(threads)))
        started = time.perf_counter()
        list(pool.map(loop, range(0, per_thread * threads, per_thread)))
        seconds = time.perf_counter() - started
        delivered = broker.wait_for_depth(
            depth, threads + per_thread * threads) - threads
    sent = per_thread * threads
    return {'threads': threads, 'count': sent, 'seconds': seconds,
            'rate': sent / seconds, 'delivered': delivered}


def _median_run(runs):
    """The run whose rate is the median (lower median for even counts)."""
    rate = statistics.median_low([run['rate'] for run in runs])
    chosen = dict(next(run for run in runs if run['rate'] == rate))
    chosen['runs'] = [run['rate'] for run in runs]
    return chosen


def run(transport_url, workdir, quick, log):
    """All of target 1; returns the raw figures.

    The reference and the passes alternate, ``repeats`` times, and the
    median of each is kept: on a shared, noisy machine a single run of
    either can land in a busy moment.
    """
    rows = 1500 if quick else 10000
    repeats = 3
    sweep_rows = 800 if quick else 4000
    levels = (1, 4, 8) if quick else (1, 2, 4, 8, 16, 32)
    kombu_url = env.kombu_url(transport_url)
    results = {'rows': rows, 'repeats': repeats}
    runs = {'kombu': []}
    for repeat in range(repeats):
        log('dispatch: round %d/%d: kombu confirmed publish, then one pass '
            'per backend, %d rows each', repeat + 1, repeats, rows)
        runs['kombu'].append(broker.confirmed_publish_rate(kombu_url, rows))
        for backend in env.BACKENDS:
            runs.setdefault('pass_%s' % backend, []).append(
                pass_rate(backend, transport_url, rows, workdir))
    for name, measured in runs.items():
        results[name] = _median_run(measured)
    results['sweep'] = {'pass_sqlite': [], 'oslo_cast': []}
    for level in levels:
        log('dispatch: concurrency %d (pass on sqlite, oslo cast loop)',
            level)
        results['sweep']['pass_sqlite'].append(pass_rate(
            'sqlite', transport_url, sweep_rows, workdir,
            cast_concurrency=level))
        results['sweep']['oslo_cast'].append(
            oslo_cast_rate(transport_url, sweep_rows, level))
    return results
