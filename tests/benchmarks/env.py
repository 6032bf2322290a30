"""The real services a benchmark runs against, and throwaway databases.

The URLs come from the same variables as the functional tests
(``. tests/functional/services.sh``'s env file sets them); a benchmark
never starts, stops or reconfigures those servers. Databases are created
per measurement and dropped afterwards.
"""

import contextlib
import os
import pathlib
import sys
import tempfile
import time
import urllib.parse
import uuid

from oslo_config import cfg

from tests.chaos import services as chaos_services
from tests.functional import databases
from worker.db import migration
from worker.db import session as db_session
from worker import rpc
from worker import rpcapi

TRANSPORT_VARIABLE = 'BARBICAN_RETRY_TEST_TRANSPORT_URL'
POSTGRESQL_VARIABLE = 'BARBICAN_RETRY_TEST_POSTGRESQL_URL'
BACKENDS = ('sqlite', 'postgresql')

# oslo.messaging's default control exchange for this project (see
# worker.rpc.get_transport); casts go to <exchange>/<topic>.
CONTROL_EXCHANGE = 'barbican_retry'


class MissingService(RuntimeError):
    """A server the benchmark needs is not configured."""


def require_services():
    """Return ``(transport_url, postgresql_url)`` or raise MissingService."""
    missing = [name for name in (TRANSPORT_VARIABLE, POSTGRESQL_VARIABLE)
               if not os.environ.get(name)]
    if missing:
        raise MissingService(
            'missing %s: start the services with '
            '`tests/functional/services.sh start DIR` and `. DIR/env` '
            '(bin/run-tests.sh does so for the tests)' % ', '.join(missing))
    return os.environ[TRANSPORT_VARIABLE], os.environ[POSTGRESQL_VARIABLE]


def kombu_url(transport_url):
    """Turn oslo.messaging's ``rabbit://`` URL into kombu's ``amqp://``.

    Same host, port, credentials and virtual host, so the raw reference
    runs on the very broker the product uses.
    """
    parts = urllib.parse.urlsplit(transport_url)
    return urllib.parse.urlunsplit(('amqp',) + tuple(parts[1:]))


def new_topic(prefix='brbench'):
    """A topic of its own, so runs never see each other's messages."""
    return '%s_%s' % (prefix, uuid.uuid4().hex[:10])


@contextlib.contextmanager
def scratch_dir(prefix='barbican-retry-bench-'):
    """A temporary directory for config files, logs and SQLite files.

    Servers started for the run keep their data in it too: as root they
    run as their own users, so it is made traversable for them.
    """
    with tempfile.TemporaryDirectory(prefix=prefix) as path:
        chaos_services.make_reachable(path)
        yield pathlib.Path(path)


@contextlib.contextmanager
def database(backend, workdir):
    """A migrated, empty database of its own; yields (url, Database)."""
    if backend != 'sqlite' and not databases.server_url(backend):
        raise MissingService('no %s server configured' % backend)
    url = databases.create(backend, workdir)
    db = None
    try:
        db = db_session.Database.from_url(url)
        migration.upgrade(db.engine)
        yield url, db
    finally:
        if db is not None:
            db.dispose()
        _drop(backend, url)


def _drop(backend, url, attempts=5):
    # NOTE: DROP DATABASE ... WITH (FORCE) fails while an autovacuum worker
    # (started by a bulk load) is in the database: our role may not
    # terminate it. It finishes within seconds, so try again.
    for attempt in range(attempts):
        try:
            databases.drop(backend, url)
            return
        except Exception as exc:
            if attempt == attempts - 1:
                sys.stderr.write('tests.benchmarks: could not drop %s: %s\n'
                                 % (url.rsplit('/', 1)[-1], exc))
                return
            time.sleep(2)


_TRANSPORTS = {}


def transport(transport_url):
    """One oslo.messaging transport per URL for the benchmark process.

    oslo.messaging registers some options on the global CONF only (see
    tests/functional/test_end_to_end.py), hence ``cfg.CONF``.
    """
    if transport_url not in _TRANSPORTS:
        _TRANSPORTS[transport_url] = rpc.get_transport(cfg.CONF,
                                                       url=transport_url)
    return _TRANSPORTS[transport_url]


def worker_api(transport_url, topic):
    """The product's RPC client of ``topic``, as the daemon builds it."""
    return rpcapi.WorkerAPI.from_transport(transport(transport_url), topic)


def product_queues_durable():
    """Whether the product's queues are durable (its messages persistent).

    ``worker.rpc.get_transport`` may change oslo.messaging's default, so
    ask the configuration once a transport has been made.
    """
    transport(os.environ[TRANSPORT_VARIABLE])
    if 'oslo_messaging_rabbit' not in cfg.CONF:
        return False
    return bool(cfg.CONF.oslo_messaging_rabbit.amqp_durable_queues)


def cleanup_transports():
    """Close the connections of every transport made by ``transport``."""
    while _TRANSPORTS:
        _, value = _TRANSPORTS.popitem()
        value.cleanup()
