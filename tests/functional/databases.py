"""Throwaway databases on the real servers started by bin/run-tests.sh.

Each test gets a database of its own: a new SQLite file, or a new database
created on the PostgreSQL or MariaDB server named by the environment.
"""

import os
import pathlib
import shutil
import tempfile
import time
import uuid

import sqlalchemy as sa

from worker.db import migration

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


class Templates:
    """Databases at the head of the migrations, copied from templates.

    The migrations take seconds a database (a dozen of them, each
    altering tables; up to 6 s on MariaDB on a loaded machine), and
    hundreds of tests each want a migrated database: each backend's is
    migrated once (per process) and copied. A copy has the template's
    schema and rows, ``alembic_version`` included: PostgreSQL copies
    the database itself (``CREATE DATABASE ... TEMPLATE``), MariaDB
    replays each table's ``SHOW CREATE TABLE`` and copies its rows, an
    SQLite file is copied. ``test_migrations.py`` checks the copies
    against a migrated database, and runs the migrations themselves.
    """

    def __init__(self):
        self._urls = {}
        self._directory = None

    def fill(self, backend, url):
        """Give the empty database ``url`` (made by ``create``) the
        migrated schema and rows."""
        template = self._template(backend)
        if backend == 'sqlite':
            path = sa.engine.make_url(url).database
            # Owner-only, as worker.db.session creates a new file.
            with open(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY,
                              0o600), 'wb') as copy, \
                    open(sa.engine.make_url(template).database, 'rb') as src:
                shutil.copyfileobj(src, copy)
        elif backend == 'postgresql':
            _copy_postgresql(template, url)
        else:
            _copy_mysql(template, url)

    def _template(self, backend):
        if backend not in self._urls:
            if self._directory is None:
                self._directory = tempfile.mkdtemp(prefix='brtest-templates-')
            url = create(backend, pathlib.Path(self._directory))
            self._urls[backend] = url
            engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
            try:
                migration.upgrade(engine)
            finally:
                engine.dispose()
        return self._urls[backend]

    def close(self):
        """Drop the templates."""
        for backend, url in self._urls.items():
            drop(backend, url)
        self._urls = {}
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)
            self._directory = None


def _copy_postgresql(template, url):
    # A database takes its template only when it is created: the empty
    # one is made again. Nothing is connected to the template (it was
    # migrated through a NullPool engine), which CREATE DATABASE needs.
    name = sa.engine.make_url(url).database
    engine = _admin_engine(server_url('postgresql'))
    try:
        with engine.connect() as connection:
            connection.exec_driver_sql('DROP DATABASE %s' % name)
            connection.exec_driver_sql(
                'CREATE DATABASE %s TEMPLATE %s'
                % (name, sa.engine.make_url(template).database))
    finally:
        engine.dispose()


def _copy_mysql(template, url):
    source = sa.engine.make_url(template).database
    target = sa.engine.make_url(url).database
    engine = _admin_engine(url)
    try:
        with engine.connect() as connection:
            tables = connection.exec_driver_sql(
                'SHOW FULL TABLES FROM %s' % source).fetchall()
            # Tables only: a view would need its definition rewritten.
            assert all(kind == 'BASE TABLE' for _, kind in tables), tables
            # The foreign keys name tables created later.
            connection.exec_driver_sql('SET foreign_key_checks = 0')
            for table, _ in tables:
                ddl = connection.exec_driver_sql(
                    'SHOW CREATE TABLE %s.%s' % (source, table)).one()[1]
                connection.exec_driver_sql(ddl)
                connection.exec_driver_sql(
                    'INSERT INTO %s.%s SELECT * FROM %s.%s'
                    % (target, table, source, table))
    finally:
        engine.dispose()
