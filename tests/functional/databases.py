"""Throwaway databases on the real servers started by bin/run-tests.sh.

Each test gets a database of its own: a new SQLite file, or a new database
created on the PostgreSQL or MariaDB server named by the environment.
"""

import os
import time
import uuid

import sqlalchemy as sa

BACKENDS = ('sqlite', 'postgresql', 'mysql')

_SERVER_URL_VARIABLES = {
    'postgresql': 'BARBICAN_RETRY_TEST_POSTGRESQL_URL',
    'mysql': 'BARBICAN_RETRY_TEST_MYSQL_URL',
}


def server_url(backend):
    """Return the URL of the backend's server database, or None."""
    return os.environ.get(_SERVER_URL_VARIABLES[backend])


def _admin_engine(url):
    return sa.create_engine(url, isolation_level='AUTOCOMMIT',
                            poolclass=sa.pool.NullPool)


def create(backend, tmp_path, server=None):
    """Create an empty database; return its URL.

    ``server``: the URL of the server's database, when not the one the
    environment names (a node of the Galera cluster).
    """
    if backend == 'sqlite':
        return 'sqlite:///%s' % (tmp_path / ('%s.sqlite' % uuid.uuid4().hex))
    base = sa.engine.make_url(server or server_url(backend))
    name = 'brtest_%s' % uuid.uuid4().hex[:12]
    engine = _admin_engine(base)
    with engine.connect() as connection:
        if backend == 'mysql':
            connection.exec_driver_sql(
                'CREATE DATABASE %s CHARACTER SET utf8mb4' % name)
        else:
            connection.exec_driver_sql('CREATE DATABASE %s' % name)
    engine.dispose()
    return base.set(database=name).render_as_string(hide_password=False)


def drop(backend, url, server=None):
    """Drop a database made by ``create`` (best effort).

    PostgreSQL refuses ``WITH (FORCE)`` to a role that may not signal
    every backend on the database, and an autovacuum worker busy on it
    is one: tried again a few times, then left to its throwaway server.
    """
    if backend == 'sqlite':
        return
    target = sa.engine.make_url(url)
    engine = _admin_engine(server or server_url(backend))
    statement = ('DROP DATABASE IF EXISTS %s WITH (FORCE)'
                 if backend == 'postgresql' else 'DROP DATABASE IF EXISTS %s')
    try:
        for attempt in range(_DROP_ATTEMPTS):
            try:
                with engine.connect() as connection:
                    connection.exec_driver_sql(statement % target.database)
                return
            except sa.exc.DBAPIError:
                if attempt == _DROP_ATTEMPTS - 1:
                    return
                time.sleep(1)
    finally:
        engine.dispose()


_DROP_ATTEMPTS = 5
