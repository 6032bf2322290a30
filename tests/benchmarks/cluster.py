"""Issue 15: the drain and worker-pool figures on a MariaDB Galera cluster
and a RabbitMQ cluster, beside one MariaDB server and one broker.

The same deployment on both: three ``barbican-worker`` launchers of one
process each and one ``barbican-retry`` daemon. On the single servers
they all use the one MariaDB and the one RabbitMQ; on the clusters
(``tests/functional/cluster.sh``, 3 nodes each, started unless
``BARBICAN_RETRY_TEST_CLUSTER_DIR`` names running ones) every process
connects to Galera through HAProxy (writer node 1, as OpenStack deploys
it), launcher k to broker node k first, with ``[database]
mysql_wsrep_sync_wait = 1`` and quorum queues, as doc/install.md
advises, and the daemon to broker node 1 first. All on this one
machine: the cluster's figure is its cost in CPU and round trips, not a
network's.

- drain: N certificate orders, each with a retry row due at T for its
  first step (as a plugin's "try again later" leaves it): the daemon
  casts them at T, the workers run both steps (the second cast by the
  result of the first). Rate = N / (last order ACTIVE - T).
- worker pool: N certificate orders created, then their first steps cast
  (two steps each, the second cast by the result of the first). Rate = N
  / (last order ACTIVE - first cast).

Both also on the Galera cluster with the one broker (issue 32: Galera
beside one MariaDB), which tells the database cluster's cost from the
broker cluster's (quorum queues).
"""

import concurrent.futures
import contextlib
import datetime
import time

from oslo_utils import timeutils

from tests.benchmarks import env
from tests.benchmarks import procs
from tests.benchmarks import worker_pool
from tests.chaos import services as chaos_services
from tests.functional import databases
from tests import singular
from worker.db import migration
from worker.db import session as db_session
from worker import order_types

LAUNCHERS = 3
_OPTIONS = {'scheduler': {'schedule_period_seconds': 1},
            'worker': {'workers': 1},
            'simple_certificate': {'delay_before_update_seconds': 0}}
_CLUSTER_OPTIONS = {'database': {'mysql_wsrep_sync_wait': '1'},
                    'oslo_messaging_rabbit': {'rabbit_quorum_queue': 'true'}}


@contextlib.contextmanager
def _database(server):
    """A migrated database of its own on the MariaDB server (or Galera
    node) of ``server``; yields ``(url, Database)``."""
    url = databases.create('mysql', None, server=server)
    database = db_session.Database.from_url(url)
    try:
        migration.upgrade(database.engine)
        yield url, database
    finally:
        database.dispose()
        databases.drop('mysql', url, server=server)


@contextlib.contextmanager
def _deployment(workdir, name, nodes, options):
    """The launchers and the daemon, each on ``nodes[k]``
    (``(database_url, transport_url)``), until the block exits; yields
    the topic."""
    topic = env.new_topic()
    configs = [procs.write_config(workdir, '%s-node%d' % (name, k),
                                  database_url, transport_url, topic,
                                  options)
               for k, (database_url, transport_url) in enumerate(nodes)]
    with contextlib.ExitStack() as stack:
        for k in range(LAUNCHERS):
            stack.enter_context(procs.workers(
                workdir, configs[k % len(configs)], 1,
                '%s-workers%d' % (name, k)))
        stack.enter_context(procs.scheduler(workdir, configs[0],
                                            name + '-retry'))
        yield topic


def _load_due(database, count, due):
    """``count`` certificate orders whose first step waits for its retry
    row, due at ``due``."""
    now = timeutils.utcnow()
    messages = worker_pool.create_orders(
        database, order_types.get('certificate'), count)
    retry_tasks = database.repositories.retry_tasks
    with database.session() as session, session.begin():
        for message in messages:
            for step in message:
                singular.add_retry(retry_tasks, session, step.order_id,
                                   step.step, due, args=[step.order_id],
                                   kwargs={'generation': step.generation},
                                   now=now)


def _drain(workdir, name, server, nodes, options, count, log):
    with _database(server) as (url, database):
        nodes = nodes(url)
        with _deployment(workdir, name + '-drain', nodes, options):
            # T a little ahead, so every row is in before it is due.
            due = timeutils.utcnow() + datetime.timedelta(seconds=3)
            _load_due(database, count, due)
            done, last = procs.wait_for_status(
                database, '', count, timeout=60 + count / 10.0)
    return _figures(log, name + ' drain', 'rows', count, done, due, last)


def _pool(workdir, name, server, nodes, options, count, log):
    workflow = order_types.get('certificate')
    with _database(server) as (url, database):
        nodes = nodes(url)
        messages = worker_pool.create_orders(database, workflow, count)
        with _deployment(workdir, name + '-pool', nodes, options) as topic:
            api = env.worker_api(nodes[0][1], topic)
            first_cast = timeutils.utcnow()
            with concurrent.futures.ThreadPoolExecutor(
                    worker_pool.CAST_THREADS) as pool:
                list(pool.map(api.run_steps, messages))
            done, last = procs.wait_for_status(
                database, '', count, timeout=60 + count / 5.0)
    return _figures(log, name + ' pool', 'orders', count, done, first_cast,
                    last)


def _figures(log, what, unit, count, done, started, last):
    """``done`` of ``count`` finished from ``started`` to ``last`` (None
    if none did): logged and returned."""
    seconds = (last - started).total_seconds() if last else float('nan')
    log('cluster benchmark: %s %d/%d in %.1fs', what, done, count, seconds)
    return {unit: count, 'done': done, 'seconds': seconds,
            'rate': done / seconds if last else 0.0}


def _galera(clusters, transport_url):
    """The Galera cluster's nodes with the one broker: launcher k on
    Galera node k, with ``mysql_wsrep_sync_wait`` as on the clusters."""
    def nodes(url):
        return [(database_url, transport_url)
                for database_url, _ in clusters.nodes(url)]
    return dict(server=clusters.server_url, nodes=nodes,
                options=dict(_OPTIONS,
                             database=_CLUSTER_OPTIONS['database']))


def run(transport_url, workdir, quick, log):
    """Issue 15's figures; returns the raw figures."""
    server = databases.server_url('mysql')
    if not server:
        raise env.MissingService('no MariaDB server configured')
    rows = 2000 if quick else 10000
    orders = 1000 if quick else 3000
    clusters = chaos_services.Clusters(str(workdir))
    try:
        single = dict(server=server, options=_OPTIONS,
                      nodes=lambda url: [(url, transport_url)])
        cluster = dict(server=clusters.server_url,
                       options=dict(_OPTIONS, **_CLUSTER_OPTIONS),
                       nodes=clusters.nodes)
        started = time.monotonic()
        results = {'launchers': LAUNCHERS}
        galera = _galera(clusters, transport_url)
        sites = (('single', single), ('galera', galera),
                 ('cluster', cluster))
        for key, site in sites:
            results[key] = {
                'drain': _drain(workdir, key, site['server'], site['nodes'],
                                site['options'], rows, log),
                'pool': _pool(workdir, key, site['server'], site['nodes'],
                              site['options'], orders, log)}
        results['seconds'] = time.monotonic() - started
    finally:
        clusters.close()
    return results
