"""Issue 27: orders created per second through ``worker.api.OrderAPI``.

Creation as a service does it: ``OrderAPI`` with the product's RPC client
(``worker.rpcapi.WorkerAPI``) on the real RabbitMQ, so each create commits
its order and then casts its first steps. No worker runs: the casts land
in a sink queue bound to a topic of this measurement alone (bounded, and
deleted at the end), whose depth proves every cast arrived. Measured on
SQLite (a file in the scratch directory), PostgreSQL and MariaDB, each on
a fresh database, ``certificate`` orders with empty metadata:

- ``reference``: the way before the API, what the operator commands and
  the demo called: ``worker.api.commands.create`` of one order, then
  ``casts.cast_steps`` of its steps, one order a call;
- ``no_key``: ``create``, one order a call, no idempotency key;
- ``new_key``: ``create`` with a new idempotency key each call (a read of
  the key, then the insert);
- ``existing_key``: ``create`` again with a key ``new_key`` used, for the
  same request: the retried request, reads only, nothing created;
- ``bulk``: ``create_many``, ``BULK`` orders a call, one transaction.

The variants take turns in rounds, so that each meets the same table
sizes and the same moments of a shared machine's load; a rate is the
orders of all its rounds over the seconds they took.
"""

import time

from oslo_utils import timeutils
import sqlalchemy as sa

from tests.benchmarks import broker
from tests.benchmarks import env
from tests import config
from tests.functional import databases
from worker import api as api_module
from worker.api import casts
from worker.api import commands
from worker.api import requests
from worker import order_types

ORDER_TYPE = 'certificate'
PROJECT = 'benchmark'
#: Orders per ``create_many`` call.
BULK = 100
#: Orders of each variant one at a time in the uncounted first round.
WARM_UP = 5
VARIANTS = ('reference', 'no_key', 'new_key', 'existing_key', 'bulk')


class _Run:
    """One backend's clients and what its variants did so far."""

    def __init__(self, database, api, worker_api):
        self.database = database
        self.api = api
        self.worker_api = worker_api
        self.workflow = order_types.get(ORDER_TYPE)
        self.seconds = dict.fromkeys(VARIANTS, 0.0)
        self.orders = dict.fromkeys(VARIANTS, 0)

    def timed(self, variant, orders, function, *args):
        """Run ``function(*args)``; add its wall time to ``variant``."""
        started = time.perf_counter()
        function(*args)
        self.seconds[variant] += time.perf_counter() - started
        self.orders[variant] += orders

    def reference(self, count):
        """``count`` orders the old way, one a call."""
        for _ in range(count):
            created = commands.create(
                self.database, requests.CreateOrders(self.workflow, {}),
                timeutils.utcnow())
            casts.cast_steps(self.worker_api, created.to_cast)

    def no_key(self, count):
        """``count`` creates without a key."""
        for _ in range(count):
            self.api.create(ORDER_TYPE, {}, project_id=PROJECT)

    def keyed(self, keys):
        """One create with each of ``keys``: new ones create an order,
        existing ones (of the same request) return it."""
        for key in keys:
            self.api.create(ORDER_TYPE, {}, project_id=PROJECT,
                            idempotency_key=key)

    def bulk(self, calls):
        """``calls`` ``create_many`` of ``BULK`` orders."""
        for _ in range(calls):
            self.api.create_many(ORDER_TYPE, {}, BULK, project_id=PROJECT)

    def round(self, number, singles, bulk_calls):
        """One turn of every variant: ``singles`` orders each one at a
        time, ``bulk_calls`` calls of ``create_many``."""
        keys = ['round-%d-%d' % (number, index) for index in range(singles)]
        self.timed('reference', singles, self.reference, singles)
        self.timed('no_key', singles, self.no_key, singles)
        self.timed('new_key', singles, self.keyed, keys)
        self.timed('existing_key', singles, self.keyed, keys)
        self.timed('bulk', bulk_calls * BULK, self.bulk, bulk_calls)

    def orders_stored(self):
        """The orders in the database."""
        with self.database.reader() as session:
            return session.execute(
                sa.text('SELECT count(*) FROM orders')).scalar()

    def figures(self):
        """Orders, seconds and orders/s of each variant."""
        figures = {}
        for variant in VARIANTS:
            orders, seconds = self.orders[variant], self.seconds[variant]
            figures[variant] = {'orders': orders, 'seconds': seconds,
                                'rate': orders / seconds if seconds else 0.0}
        return figures


def _expected(singles, bulk_calls, rows_per_cast):
    """``(orders, casts)`` of one round: a cast per order created one at a
    time (the certificate type has one first step), ``create_many``'s in
    messages of ``rows_per_cast`` steps; the existing key creates and
    casts nothing."""
    per_bulk_call = -(-BULK // rows_per_cast)
    return (3 * singles + bulk_calls * BULK,
            3 * singles + bulk_calls * per_bulk_call)


def measure(backend, transport_url, workdir, rounds, singles, bulk_calls,
            log):
    """Every variant on a fresh database of ``backend``; its figures."""
    topic = env.new_topic()
    worker_api = env.worker_api(transport_url, topic)
    rows_per_cast = 50
    # A small warm-up round first (connection pools, the API's
    # measurement of the database's clock, the broker's connection), as
    # in a running service; it is not counted.
    warm_orders, warm_messages = _expected(WARM_UP, 1, rows_per_cast)
    round_orders, round_messages = _expected(singles, bulk_calls,
                                             rows_per_cast)
    orders = warm_orders + rounds * round_orders
    messages = warm_messages + rounds * round_messages
    with env.database(backend, workdir) as (_, database), \
            broker.sink_queue(env.kombu_url(transport_url), topic,
                              max_length=2 * messages) as depth:
        api = api_module.OrderAPI(database, config.make_conf(), worker_api,
                                  rows_per_cast=rows_per_cast)
        _Run(database, api, worker_api).round(0, WARM_UP, 1)
        counted = _Run(database, api, worker_api)
        for number in range(1, rounds + 1):
            log('create: %s, round %d/%d', backend, number, rounds)
            counted.round(number, singles, bulk_calls)
        queued = broker.wait_for_depth(depth, messages)
        stored = counted.orders_stored()
    return {
        'backend': backend, 'rounds': rounds, 'bulk_size': BULK,
        'rows_per_cast': rows_per_cast, **counted.figures(),
        'messages': queued, 'expected_messages': messages,
        'orders_stored': stored, 'expected_orders': orders,
    }


def run(transport_url, workdir, quick, log):
    """Issue 27's creation figures on every database; the raw figures."""
    rounds = 4 if quick else 10
    singles = 50 if quick else 200
    bulk_calls = 2 if quick else 10
    backends = env.BACKENDS + (
        ('mysql',) if databases.server_url('mysql') else ())
    results = {'rounds': rounds, 'singles_per_round': singles,
               'bulk_calls_per_round': bulk_calls, 'backends': {}}
    for backend in backends:
        figures = measure(backend, transport_url, workdir, rounds, singles,
                          bulk_calls, log)
        results['backends'][backend] = figures
        log('create: %s: %s', backend, ', '.join(
            '%s %.0f orders/s' % (variant, figures[variant]['rate'])
            for variant in VARIANTS))
    return results
