"""Issue 45, part 4: a bulk cancel of many orders while the workers keep
running the others.

On PostgreSQL, with a real ``barbican-worker`` (``WORKER_PROCESSES``)
and ``barbican-retry`` over the shared RabbitMQ:

- ``HELD`` orders (100,000 in a full run) of the ``certificate`` type
  with the metadata ``{"ca": "acme"}`` wait to start tomorrow (PENDING,
  a retry row each), as orders of an authority that an operator now
  cancels;
- a stream of other certificate orders (``{"ca": "other"}``) is created
  through ``OrderAPI.create`` at ``RATE`` orders a second, open loop
  (from one thread on a fixed schedule: a late create does not push the
  next ones back), first for ``BASELINE_SECONDS`` alone, then while
  ``OrderAPI.bulk('cancel', meta={'ca': 'acme'})`` runs, in batches of
  ``[api_limits] bulk_batch_size``;
- figures: the cancel's rate (orders a second) and, for the stream
  without and during the bulk, how many of its orders were created and
  ended ACTIVE a second (throughput), and the latency of each from its
  ``created_at`` to the ``updated_at`` of its ACTIVE row (p50, p99, max).

Nothing is delivered to callback URLs: an order's row changes last when
it turns ACTIVE, so ``updated_at`` is that moment.
"""

import datetime
import threading
import time

from oslo_utils import timeutils
import sqlalchemy as sa

from tests.benchmarks import env
from tests.benchmarks import latency
from tests.benchmarks import procs
from tests import config as test_config
from worker import api
from worker.api import commands
from worker.api import requests
from worker.db import models
from worker import order_types

WORKER_PROCESSES = 2
#: Orders cancelled in bulk: full run, quick run.
HELD = (100000, 5000)
#: Orders created a second by the stream beside it.
RATE = 10.0
#: How long the stream runs alone first (seconds): full, quick.
BASELINE_SECONDS = (60.0, 20.0)
#: Orders written per transaction while seeding the held ones.
SEED_CHUNK = 1000
BATCH_SIZE = 200


def _seed(database, count):
    """``count`` PENDING acme orders that start tomorrow."""
    workflow = order_types.get('certificate')
    now = timeutils.utcnow()
    tomorrow = now.replace(microsecond=0) + datetime.timedelta(days=1)
    for start in range(0, count, SEED_CHUNK):
        commands.create(database, requests.CreateOrders(
            workflow, {'ca': 'acme'}, min(SEED_CHUNK, count - start),
            not_before=tomorrow), timeutils.utcnow())


class _Stream:
    """Creates an order every 1 / ``RATE`` seconds until stopped; the
    ids it created, by phase."""

    def __init__(self, orders):
        self._orders = orders
        self._stop = threading.Event()
        self.phase = 'baseline'
        self.created = {'baseline': [], 'during': []}
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._thread.start()
        return self

    def _run(self):
        began = time.monotonic()
        sent = 0
        while not self._stop.is_set():
            order = self._orders.create('certificate', {'ca': 'other'},
                                        project_id='benchmark')
            self.created[self.phase].append(order.id)
            sent += 1
            delay = began + sent / RATE - time.monotonic()
            if delay > 0:
                self._stop.wait(delay)

    def stop(self):
        self._stop.set()
        self._thread.join()


def _figures(database, ids, seconds):
    """Throughput and latency of the stream's orders ``ids`` over a phase
    of ``seconds``."""
    order = models.Order
    with database.session() as session:
        rows = session.execute(
            sa.select(order.created_at, order.updated_at)
            .where(order.id.in_(ids), order.status == models.ACTIVE)).all()
    waits = [(ended - created).total_seconds() * 1000.0
             for created, ended in rows]
    return dict(latency.summary(waits), created=len(ids), active=len(rows),
                throughput=len(rows) / seconds if seconds else 0.0)


def _wait_active(database, ids, timeout):
    """Wait until every order of ``ids`` is ACTIVE (or ``timeout``)."""
    order = models.Order
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with database.session() as session:
            active = session.scalar(
                sa.select(sa.func.count()).select_from(order).where(
                    order.id.in_(ids), order.status == models.ACTIVE))
        if active >= len(ids):
            return
        time.sleep(0.5)


def measure(transport_url, workdir, log, held, baseline_seconds,
            backend='postgresql'):
    """One run on ``backend``; its figures."""
    topic = env.new_topic()
    options = {'scheduler': {'schedule_period_seconds': 1},
               'worker': {'workers': WORKER_PROCESSES},
               'simple_certificate': {'delay_before_update_seconds': 0},
               'api_limits': {'bulk_batch_size': BATCH_SIZE,
                              'max_bulk_orders': max(held, 1)}}
    with env.database(backend, workdir) as (url, database):
        log('bulk cancel: seeding %d held orders on %s', held, backend)
        _seed(database, held)
        config = procs.write_config(workdir, 'bulk-' + backend, url,
                                    transport_url, topic, options)
        conf = test_config.make_conf(**{
            'api_limits.bulk_batch_size': BATCH_SIZE,
            'api_limits.max_bulk_orders': max(held, 1)})
        orders = api.OrderAPI(database, conf,
                              env.worker_api(transport_url, topic))
        with procs.workers(workdir, config, WORKER_PROCESSES,
                           'bulk-workers'), \
                procs.scheduler(workdir, config, 'bulk-retry'):
            stream = _Stream(orders).start()
            time.sleep(baseline_seconds)
            stream.phase = 'during'
            log('bulk cancel: cancelling %d orders beside %.0f orders/s',
                held, RATE)
            started = time.monotonic()
            done = orders.bulk('cancel', all_projects=True,
                               meta={'ca': 'acme'})
            cancel_seconds = time.monotonic() - started
            stream.stop()
            _wait_active(database, stream.created['baseline'] +
                         stream.created['during'], 120)
        baseline = _figures(database, stream.created['baseline'],
                            baseline_seconds)
        during = _figures(database, stream.created['during'],
                          cancel_seconds)
    log('bulk cancel: %d of %d cancelled in %.1fs (%.0f/s); the others '
        'p99 %s ms alone, %s ms during', done.changed, done.matched,
        cancel_seconds, done.changed / cancel_seconds,
        baseline['p99'], during['p99'])
    return {'backend': backend, 'held': held, 'matched': done.matched,
            'cancelled': done.changed, 'cancel_seconds': cancel_seconds,
            'cancel_rate': done.changed / cancel_seconds,
            'batch_size': BATCH_SIZE, 'stream_rate': RATE,
            'baseline': baseline, 'during': during}


def run(transport_url, workdir, quick, log):
    """The measurement on PostgreSQL: 100,000 orders (5,000 quick)."""
    held = HELD[1] if quick else HELD[0]
    seconds = BASELINE_SECONDS[1] if quick else BASELINE_SECONDS[0]
    return measure(transport_url, workdir, log, held, seconds)
