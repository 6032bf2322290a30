"""Issue 44, item 8: the REST API (``barbican-retry-api``) beside
``OrderAPI.create``, in the same run, on the same PostgreSQL database.

The API runs as deployed: gunicorn, 2 workers (``gthread``), the whole
middleware (request id, CORS, size limit, audit) over the Flask app, in
``[api] auth_strategy = noauth`` (the caller's project and roles in the
``X-Project-Id`` and ``X-Roles`` headers). With a Keystone in the
services' env file (``BARBICAN_RETRY_TEST_KEYSTONE_URL``) a second API
runs with ``auth_strategy = keystone``, its callers sending one token
that ``auth_token`` validates once and then finds in its cache. No
worker runs: the casts land in a sink queue (as ``create``'s).

- **creates/s**: ``POST /v1/orders`` from 16 concurrent keep-alive
  clients (threads, a ``requests.Session`` each), beside
  ``OrderAPI.create`` in this process, one caller and 16 threads, the
  variants taking turns in rounds; the reference is the faster direct
  variant;
- **latency of a create**: p50/p99 at rest (one client, one request after
  the other) and under load (open-loop: requests paced at half the
  measured rate, timed from when each was due);
- **a page of a big table**: ``GET /v1/orders?limit=100`` p99 with
  1,000,000 orders in the table (``--quick``: 100,000), half of them the
  caller's: the first page and a page after a marker 90% deep, with the
  plans PostgreSQL runs them with (``rest_listing``).
"""

import contextlib
import os
import time

import sqlalchemy as sa

from tests.benchmarks import broker
from tests.benchmarks import env
from tests.benchmarks import http_load
from tests.benchmarks import procs
from tests.benchmarks import rest_listing
from tests import config
from tests.functional import databases
from tests.functional import keystone as keystone_module
from tests.functional import processes
from worker import api as api_module

PROJECT = 'benchmark'
CLIENTS = 16
GUNICORN_WORKERS = 2
#: ``[api] threads``: its default.
THREADS = 16
CREATE = {'type': 'certificate', 'meta': {}}
NOAUTH_HEADERS = {'X-Project-Id': PROJECT, 'X-Roles': 'reader,member',
                  'X-User-Id': 'bench'}
#: Creates of each variant before the counted rounds.
WARM_UP = 64


def _sent(status):
    return lambda client: client.post('/v1/orders', CREATE) == status


def _api_options(port, strategy):
    return {'api': {'auth_strategy': strategy, 'bind_host': '127.0.0.1',
                    'bind_port': port, 'workers': GUNICORN_WORKERS,
                    'threads': THREADS,
                    'audit_map_file': os.path.join(
                        processes.REPO_ROOT, 'etc', 'barbican-retry',
                        'api_audit_map.conf')}}


@contextlib.contextmanager
def _server(workdir, name, database_url, transport_url, topic, options):
    """``barbican-retry-api`` until the block exits; yields its URL and
    the pid of gunicorn's master."""
    port = processes.free_port()
    options = dict(options)
    api_options = _api_options(port, options.pop('strategy'))
    api_options['api'].update(options.pop('api', {}))
    options.update(api_options)
    path = procs.write_config(workdir, name, database_url, transport_url,
                              topic, options)
    base_url = 'http://127.0.0.1:%d' % port
    with procs.running(workdir, path, 'barbican-retry-api', name,
                       'Booting worker', ready_count=GUNICORN_WORKERS,
                       timeout=120) as daemon:
        processes.wait_for(
            lambda: processes.api_healthy(base_url, daemon), 120,
            '%s answering' % name)
        yield base_url, daemon.process.pid


class _Keystone:
    """The keystone variant's personas and token, when a Keystone runs."""

    def __init__(self, keystone):
        self.keystone = keystone
        self.personas = keystone.make_personas()
        self.headers = {'X-Auth-Token': keystone.token(
            self.personas.a_member)}

    def options(self):
        """The API's ``[keystone_authtoken]``."""
        return {'strategy': 'keystone', 'keystone_authtoken':
                self.keystone.authtoken_options(self.personas.service)}

    def close(self):
        """Delete the personas."""
        self.keystone.remove_personas(self.personas)


class _Creates:
    """The create variants and what each did so far."""

    def __init__(self, api, pools, servers):
        self.api = api
        self.pools = pools
        #: ``{name: pid of its gunicorn master}`` of the HTTP variants.
        self.servers = servers
        self.figures = {}

    def direct_one(self, total):
        """``total`` creates, one caller."""
        def send(_):
            self.api.create('certificate', {}, project_id=PROJECT)
            return True
        return http_load.sequential(None, total, send)

    def direct_threads(self, total):
        """``total`` creates from ``CLIENTS`` threads."""
        def send(_):
            self.api.create('certificate', {}, project_id=PROJECT)
            return True
        return http_load.closed_loop(self.pools['direct'], total, send)

    def http(self, name, total):
        """``total`` POSTs from the ``CLIENTS`` clients of pool ``name``;
        with the CPU its server (every gunicorn process) spent on them."""
        before = procs.tree_cpu_seconds(self.servers[name])
        figures = http_load.closed_loop(self.pools[name], total, _sent(201))
        spent = procs.tree_cpu_seconds(self.servers[name]) - before
        return dict(figures, server_cpu_ms=1000.0 * spent / total)

    def round(self, total, count=True):
        """One turn of every variant, ``total`` creates each."""
        results = {'direct_one': self._timed(self.direct_one, total),
                   'direct_threads': self.direct_threads(total)}
        for name in self.pools:
            if name != 'direct':
                results['http_' + name] = self.http(name, total)
        if count:
            for variant, figures in results.items():
                self._add(variant, figures)

    @staticmethod
    def _timed(function, total):
        clock = http_load.CpuClock()
        started = time.perf_counter()
        result = function(total)
        seconds = time.perf_counter() - started
        return dict(result, seconds=seconds, rate=total / seconds,
                    client_cpu_ms=1000.0 * clock.spent() / total)

    def _add(self, variant, figures):
        mine = self.figures.setdefault(variant, {
            'requests': 0, 'failed': 0, 'seconds': 0.0, 'cpu_ms': 0.0,
            'server_cpu_ms': 0.0})
        mine['requests'] += figures['requests']
        mine['failed'] += figures['failed']
        mine['seconds'] += figures['seconds']
        mine['cpu_ms'] += figures['client_cpu_ms'] * figures['requests']
        mine['server_cpu_ms'] += (figures.get('server_cpu_ms', 0.0) *
                                  figures['requests'])

    def rates(self):
        """Each variant's requests, failures, rate and client CPU."""
        return {variant: {
            'requests': mine['requests'], 'failed': mine['failed'],
            'seconds': mine['seconds'],
            'rate': mine['requests'] / mine['seconds'],
            'client_cpu_ms': mine['cpu_ms'] / mine['requests'],
            'server_cpu_ms': mine['server_cpu_ms'] / mine['requests']}
            for variant, mine in self.figures.items()}


def _latencies(base_url, headers, rate, at_rest, loaded):
    """p50/p99 of a create at rest and paced at ``rate``/s."""
    client = http_load.Client(base_url, headers)
    try:
        rest = http_load.sequential(client, at_rest, _sent(201))
    finally:
        client.close()
    pool = http_load.Pool(base_url, headers, 2 * CLIENTS)
    try:
        paced = http_load.open_loop(pool, rate, loaded, _sent(201))
    finally:
        pool.close()
    return {'at_rest': rest, 'half_rate': paced}


def _listing(database, base_url, size, repeats, log):
    """The big table's listing figures: seeding, p99s and plans."""
    log('rest_api: seeding %d orders', size)
    seeded = rest_listing.seed(database, size)
    marker, created_at = seeded.deep_marker()
    headers = dict(NOAUTH_HEADERS, **{'X-Project-Id': rest_listing.MANY})
    client = http_load.Client(base_url, headers)
    pages = {'first': '/v1/orders?limit=%d' % rest_listing.PAGE,
             'deep': '/v1/orders?limit=%d&marker=%s' % (rest_listing.PAGE,
                                                        marker)}

    def page(path):
        def send(client):
            response = client.get(path)
            return (response.status_code == 200 and
                    len(response.json()['orders']) == rest_listing.PAGE)
        return send
    try:
        figures = {name: http_load.sequential(client, repeats, page(path))
                   for name, path in pages.items()}
    finally:
        client.close()
    figures['first']['plan'] = rest_listing.plan(database)
    figures['deep']['plan'] = rest_listing.plan(database,
                                                (created_at, marker))
    figures['deep']['bounded_plan'] = rest_listing.plan(
        database, (created_at, marker), bounded=True)
    return dict(figures, orders=size, project_orders=size // 2)


def _sizes(quick):
    if quick:
        return {'rounds': 3, 'per_round': 400, 'at_rest': 200,
                'loaded_seconds': 10, 'table': 100_000, 'repeats': 100}
    return {'rounds': 6, 'per_round': 1000, 'at_rest': 1000,
            'loaded_seconds': 30, 'table': 1_000_000, 'repeats': 300}


class _Deployment:
    """A fresh database of ``backend``, a sink of its own and the APIs
    ``servers`` names over them, until ``stack`` closes."""

    def __init__(self, stack, backend, workdir, transport_url, servers):
        self.topic = env.new_topic()
        self.kombu_url = env.kombu_url(transport_url)
        url, self.database = stack.enter_context(env.database(backend,
                                                              workdir))
        # Bounded, oldest dropped: no worker reads it.
        self.depth = stack.enter_context(broker.sink_queue(
            self.kombu_url, self.topic, max_length=1_000_000))
        started = {name: stack.enter_context(_server(
            workdir, 'api-%s-%s' % (backend, name), url, transport_url,
            self.topic, options)) for name, options in servers.items()}
        self.urls = {name: base_url
                     for name, (base_url, _) in started.items()}
        self.pids = {name: pid for name, (_, pid) in started.items()}
        self.api = api_module.OrderAPI(
            self.database, config.make_conf(),
            env.worker_api(transport_url, self.topic))

    def creates(self, stack, sizes, headers, log):
        """The create variants in rounds; their rates."""
        pools = {'direct': http_load.Pool('http://unused', {}, CLIENTS)}
        for name, base_url in self.urls.items():
            pools[name] = http_load.Pool(base_url, headers[name], CLIENTS)
        for pool in pools.values():
            stack.callback(pool.close)
        creates = _Creates(self.api, pools, self.pids)
        creates.round(WARM_UP, count=False)
        for number in range(1, sizes['rounds'] + 1):
            log('rest_api: %s, creates, round %d/%d',
                self.database.engine.dialect.name, number, sizes['rounds'])
            creates.round(sizes['per_round'])
        return creates.rates()

    def casts(self):
        """The orders stored, and the messages and steps in the sink.

        Concurrent creates share messages (``worker.api.coalesce``):
        the steps they carry are counted, a first step per order.
        """
        time.sleep(1)
        messages = self.depth()
        return {'orders_stored': _count(self.database),
                'messages_queued': messages,
                'steps_queued': broker.rows_in_sink(
                    self.kombu_url, self.topic, messages)}


def _common(sizes, auth, keystone):
    return {'auth': sorted(auth), 'clients': CLIENTS,
            'gunicorn_workers': GUNICORN_WORKERS,
            'gunicorn_threads': THREADS,
            'client': 'threads, a requests.Session each',
            'keystone_available': keystone is not None, 'sizes': sizes}


def run(transport_url, workdir, quick, log):
    """The REST API's figures on PostgreSQL (creates also on MariaDB
    when a server is configured); the raw figures."""
    sizes = _sizes(quick)
    keystone = keystone_module.Keystone.from_environment()
    with contextlib.ExitStack() as stack:
        servers = {'noauth': {'strategy': 'noauth'}}
        headers = {'noauth': NOAUTH_HEADERS}
        if keystone:
            persona = _Keystone(keystone)
            stack.callback(persona.close)
            servers['keystone'] = persona.options()
            headers['keystone'] = persona.headers
        deployment = _Deployment(stack, 'postgresql', workdir,
                                 transport_url, servers)
        results = dict(_common(sizes, servers, keystone),
                       creates=deployment.creates(stack, sizes, headers,
                                                  log))
        rate = results['creates']['http_noauth']['rate'] / 2
        log('rest_api: latency, at rest and at %.0f/s', rate)
        results['latency'] = _latencies(
            deployment.urls['noauth'], NOAUTH_HEADERS, rate,
            sizes['at_rest'], max(1, int(rate * sizes['loaded_seconds'])))
        results.update(deployment.casts())
        results['listing'] = _listing(
            deployment.database, deployment.urls['noauth'], sizes['table'],
            sizes['repeats'], log)
    if databases.server_url('mysql'):
        with contextlib.ExitStack() as stack:
            deployment = _Deployment(stack, 'mysql', workdir, transport_url,
                                     {'noauth': {'strategy': 'noauth'}})
            mariadb = _common(sizes, ['noauth'], None)
            mariadb['creates'] = deployment.creates(
                stack, sizes, {'noauth': NOAUTH_HEADERS}, log)
            mariadb.update(deployment.casts())
        results['mariadb'] = mariadb
    return results


def _count(database):
    with database.reader() as session:
        return session.execute(sa.text(
            'SELECT count(*) FROM orders')).scalar()
