"""Issue 32, part 3: how long an order waits before each of its steps.

Two latencies of ``certificate`` orders (two steps in sequence, the simple
plugin, ``delay_before_update_seconds`` = 0) on a real ``barbican-worker``
(``WORKER_PROCESSES``) and ``barbican-retry`` (period 1 s), on PostgreSQL
and on MariaDB, the shared RabbitMQ:

- create -> first step started: the order's ``created_at`` to its first
  run's ``started_at``;
- step end -> next step started: a run's ``finished_at`` to the next run's
  ``started_at``, in the same order.

Each is taken three ways, on one fresh database per backend:

- ``rest``: one order at a time through ``worker.api.OrderAPI.create``
  (commit, then cast, as an API server does), the next created once the
  last is ACTIVE;
- ``throughput``: a burst of orders cast at once, as ``worker_pool``
  measures it (orders / (last ACTIVE - first cast)): the rate that the
  loaded run takes half of;
- ``loaded``: ``OrderAPI.create`` of one order every 1 / (half that rate)
  seconds, from one thread on a fixed schedule, open loop (a late create
  does not push the next ones back).

The timestamps are the ones the product writes: ``orders.created_at`` (the
API's "now", taken before its insert) and the history rows of
``order_step_runs`` (``worker.db.history``): ``started_at`` is the
``now`` of the claim's transaction, ``finished_at`` the ``now`` of the
transaction that writes the result. They are microseconds on both
databases (``DATETIME(6)`` on MariaDB), which is precise enough for
targets in milliseconds; the worker's log lines have milliseconds only
and would need DEBUG logging in the loop being measured. A worker writes
them on the database's clock, its host's plus the offset it measured at
its last heartbeat (``worker.common.clock``), whose error (half a round
trip, several milliseconds on a loaded machine) is as large as what is
measured: ``OffsetLog`` puts them back on the host's clock, which the
API here writes on (``now``) and which the database, on this host, reads
too.

Where the time of create -> first step started goes, at rest, is split
at the moments the API's cast began and ended (read on the API's clock
around the product's RPC client): before it, the API's checks, insert and
commit; the cast (publish); after it, the broker, the worker's receive
path and dispatch, and its claim up to the claim's ``now``.
"""

import bisect
import concurrent.futures
import datetime
import threading
import time

from oslo_utils import timeutils
import sqlalchemy as sa

from tests.benchmarks import env
from tests.benchmarks import procs
from tests.benchmarks import worker_pool
from tests import config as test_config
from tests.functional import databases
from worker import api as api_module
from worker.common import clock
from worker.db import models
from worker import order_types

ORDER_TYPE = 'certificate'
PROJECT = 'benchmark'
WORKER_PROCESSES = 1
#: Threads that create the loaded run's orders.
CREATE_THREADS = 4
#: Orders at rest before the counted ones (connections, the API's clock).
WARM_UP = 5
#: The issue's targets, in milliseconds: p99 at rest.
TARGET_FIRST_MS = 20.0
TARGET_NEXT_MS = 10.0
_LABELS = {'postgresql': 'PostgreSQL', 'mysql': 'MariaDB'}


def percentile(values, fraction):
    """The nearest-rank percentile of ``values`` (``fraction`` 0..1);
    None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, -(-int(round(fraction * 1e6)) * len(ordered) // 1000000))
    return ordered[min(rank, len(ordered)) - 1]


def summary(values_ms):
    """``{'count', 'p50', 'p99', 'max'}`` of a list of milliseconds."""
    return {'count': len(values_ms), 'p50': percentile(values_ms, 0.50),
            'p99': percentile(values_ms, 0.99),
            'max': max(values_ms) if values_ms else None}


def _ms(later, earlier):
    return (later - earlier).total_seconds() * 1000.0


def latencies(database, order_ids, offsets):
    """``{order id: (create -> first started, [end -> next started])}``
    in ms, of the orders of ``order_ids`` that ran a step, from their
    rows, each worker's times put back on the host's clock
    (``offsets``, an ``OffsetLog``)."""
    runs = models.OrderStepRun
    query = (sa.select(models.Order.id, models.Order.created_at,
                       runs.worker, runs.started_at, runs.finished_at)
             .join(runs, runs.order_id == models.Order.id)
             .where(models.Order.id.in_(sa.bindparam('ids',
                                                     expanding=True)))
             .order_by(models.Order.id, runs.id))
    by_order = {}
    with database.reader() as session:
        for start in range(0, len(order_ids), 500):
            for row in session.execute(query, {
                    'ids': list(order_ids[start:start + 500])}):
                by_order.setdefault(row.id, []).append((
                    row.created_at, offsets.host(row.worker, row.started_at),
                    offsets.host(row.worker, row.finished_at)))
    return {order_id: (_ms(rows[0][1], rows[0][0]),
                       [_ms(after[1], before[2])
                        for before, after in zip(rows, rows[1:])])
            for order_id, rows in by_order.items()}


class OffsetLog:
    """Every clock offset each worker process measured, read from its
    heartbeat rows (``services``) as they come (every
    ``[DEFAULT] report_interval`` seconds, 10 by default).

    A worker writes its times on the database's clock: its host's plus
    the offset it last measured, whose error (half a round trip to the
    database, several ms on a loaded machine) is as large as the
    latencies measured. The database runs on this host, so the true
    offset is 0: taking off the offset that a process used at that moment
    gives back its host's clock exactly; the API here writes on the
    host's clock.
    """

    def __init__(self, database, interval=0.25):
        self._database = database
        self._interval = interval
        self._beats = {}  # name -> sorted [(heartbeat_at, offset seconds)]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()
        self.read()

    def _run(self):
        while not self._stop.wait(self._interval):
            self.read()

    def read(self):
        """Read the heartbeat rows once; keep what is new."""
        query = sa.select(models.Service.name, models.Service.heartbeat_at,
                          models.Service.clock_offset).where(
            models.Service.kind == models.WORKER)
        with self._database.reader() as session:
            found = session.execute(query).all()
        for name, beat, offset in found:
            beats = self._beats.setdefault(name, [])
            if offset is not None and (not beats or beats[-1][0] < beat):
                beats.append((beat, offset))

    def host(self, name, moment):
        """``moment`` as written by worker ``name`` on the host's clock:
        less the offset of its last heartbeat at or before it (its first
        one's before that)."""
        beats = self._beats.get(name)
        if not beats or moment is None:
            return moment
        index = bisect.bisect_right(beats, (moment, float('inf'))) - 1
        offset = beats[max(index, 0)][1]
        return moment - datetime.timedelta(seconds=offset)


def _summaries(found):
    """The summaries of ``latencies``' two figures."""
    return (summary([first for first, _ in found.values()]),
            summary([value for _, following in found.values()
                     for value in following]))


class _TimedCasts:
    """The product's RPC client, and when its last cast began and ended
    (on the API's clock: the one ``created_at`` is on)."""

    def __init__(self, worker_api, now):
        self._worker_api = worker_api
        self._now = now
        self.last = None

    def run_steps(self, steps, context=None):
        """Cast as the client does; keep ``(began, ended)``."""
        began = self._now()
        self._worker_api.run_steps(steps, context=context)
        self.last = (began, self._now())


class _Deployment:
    """A pool and its retry daemon on one database, and an API for it."""

    def __init__(self, database, transport_url, topic):
        self.database = database
        self.worker_api = env.worker_api(transport_url, topic)
        # The API on this host's clock, the one the workers' times are
        # put back on (OffsetLog).
        self.casts = _TimedCasts(self.worker_api, clock.local_utcnow)
        self.api = api_module.OrderAPI(database, test_config.make_conf(),
                                       self.casts, now=clock.local_utcnow)
        self.offsets = OffsetLog(database)
        self.active = 0  # orders ACTIVE so far, of every phase

    def wait_active(self, more, timeout):
        """Until ``more`` orders more are ACTIVE; the last one's moment."""
        self.active += more
        done, last = procs.wait_for_status(self.database, '', self.active,
                                           timeout=timeout, interval=0.002)
        if done < self.active:
            raise RuntimeError('%d of %d orders ACTIVE after %.0fs'
                               % (done, self.active, timeout))
        return last

    def create(self):
        """One order through the API; ``(id, created_at)``."""
        order = self.api.create(ORDER_TYPE, {}, project_id=PROJECT)
        return order.id, order.created_at


def _at_rest(deployment, count):
    """``count`` orders one at a time, each once the last is ACTIVE;
    where create -> first step started went: to the cast (the API's
    checks, insert and commit), the cast itself (publish), and from the
    cast to the claim (the broker, the worker's receive path and
    dispatch, the claim's transaction up to its ``now``)."""
    casts = {}
    for _ in range(count):
        order_id, created_at = deployment.create()
        deployment.wait_active(1, timeout=30)
        casts[order_id] = (created_at,) + deployment.casts.last
    found = latencies(deployment.database, list(casts),
                      deployment.offsets)
    first, following = _summaries(found)
    parts = {'to_cast_ms': [], 'cast_ms': [], 'cast_to_started_ms': []}
    for order_id, (first_ms, _) in found.items():
        created, began, ended = casts[order_id]
        parts['to_cast_ms'].append(_ms(began, created))
        parts['cast_ms'].append(_ms(ended, began))
        parts['cast_to_started_ms'].append(first_ms - _ms(began, created))
    return {'orders': count, 'first': first, 'next': following,
            **{key: summary(values) for key, values in parts.items()}}


def _throughput(deployment, count):
    """A burst of ``count`` orders cast at once: orders/s to ACTIVE."""
    messages = worker_pool.create_orders(
        deployment.database, order_types.get(ORDER_TYPE), count)
    first_cast = timeutils.utcnow()
    with concurrent.futures.ThreadPoolExecutor(
            worker_pool.CAST_THREADS) as pool:
        list(pool.map(deployment.worker_api.run_steps, messages))
    last = deployment.wait_active(count, timeout=60 + count / 20.0)
    seconds = (last - first_cast).total_seconds()
    return {'orders': count, 'seconds': seconds,
            'rate': count / seconds if seconds > 0 else 0.0}


def _loaded(deployment, count, rate):
    """``count`` creates at ``rate`` per second, open loop, from
    ``CREATE_THREADS`` threads (a create takes longer than the interval).
    """
    interval = 1.0 / rate
    started = time.monotonic()

    def create(index):
        wait = started + index * interval - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        return deployment.create()[0], max(0.0, -wait)
    with concurrent.futures.ThreadPoolExecutor(CREATE_THREADS) as pool:
        made = list(pool.map(create, range(count)))
    seconds = time.monotonic() - started
    deployment.wait_active(count, timeout=60 + count / 10.0)
    first, following = _summaries(latencies(
        deployment.database, [order_id for order_id, _ in made],
        deployment.offsets))
    return {'orders': count, 'rate_wanted': rate,
            'rate_made': count / seconds if seconds else 0.0,
            'late_ms': summary([1000.0 * late for _, late in made]),
            'first': first, 'next': following}


def measure(backend, transport_url, workdir, log, rest_orders,
            burst_orders, loaded_orders):
    """Every figure of one backend, on a database of its own."""
    topic = env.new_topic()
    name = 'latency-%s' % backend
    with env.database(backend, workdir) as (url, database):
        config = procs.write_config(
            workdir, name, url, transport_url, topic,
            {'scheduler': {'schedule_period_seconds': 1},
             'worker': {'workers': WORKER_PROCESSES},
             'simple_certificate': {'delay_before_update_seconds': 0}})
        deployment = _Deployment(database, transport_url, topic)
        with procs.workers(workdir, config, WORKER_PROCESSES,
                           name + '-workers'), \
                procs.scheduler(workdir, config, name + '-retry'), \
                deployment.offsets:
            log('latency: %s, %d orders at rest', backend, rest_orders)
            _at_rest(deployment, WARM_UP)
            rest = _at_rest(deployment, rest_orders)
            burst = _throughput(deployment, burst_orders)
            log('latency: %s, %.0f orders/s in a burst of %d; %d orders '
                'at half that', backend, burst['rate'], burst_orders,
                loaded_orders)
            loaded = _loaded(deployment, loaded_orders, burst['rate'] / 2)
    return {'backend': backend, 'processes': WORKER_PROCESSES,
            'rest': rest, 'throughput': burst, 'loaded': loaded}


def run(transport_url, workdir, quick, log):
    """Part 3's figures on PostgreSQL and (when its server runs)
    MariaDB; the raw figures."""
    sizes = (50, 400, 200) if quick else (300, 3000, 1500)
    backends = ('postgresql',) + (
        ('mysql',) if databases.server_url('mysql') else ())
    results = {'backends': {}}
    for backend in backends:
        results['backends'][backend] = figures = measure(
            backend, transport_url, workdir, log, *sizes)
        log('latency: %s at rest p99 %.1f / %.1f ms, loaded p99 %.1f / '
            '%.1f ms', backend, figures['rest']['first']['p99'],
            figures['rest']['next']['p99'], figures['loaded']['first']['p99'],
            figures['loaded']['next']['p99'])
    return results
