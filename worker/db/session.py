"""Engines and sessions, built per process from the ``[database]`` group.

There is no global session: a service builds one ``Database`` in its
``start()`` (after any fork) and hands sessions to repository functions.
"""

import os

from oslo_db import api as oslo_db_api
from oslo_db.sqlalchemy import engines
import sqlalchemy as sa
from sqlalchemy import orm

from worker.db import queries
from worker.db import repositories

# NOTE: several processes share one SQLite file in the embedded setup.
# WAL lets readers run beside the writer; the busy timeout makes a writer
# wait for the lock instead of failing at once. Transactions begin
# IMMEDIATE (write lock first): a deferred transaction that reads and then
# writes gets SQLITE_BUSY at once, without waiting, when another
# connection wrote in between.
_SQLITE_BUSY_TIMEOUT_MS = 30000

# Execution option of the engine behind ``Database.reader()``.
_READ_ONLY = 'barbican_retry_read_only'

#: Decorates a function that runs one write transaction: run it again
#: when it lost a race to another transaction. A deadlock is one; on a
#: Galera cluster so is a write set refused at COMMIT because another
#: node wrote the same row first (MariaDB reports both as a deadlock).
#: The transaction rolled back whole, so running it again is safe; the
#: waits are short, with jitter, since the winner has already committed.
retry_lost_race = oslo_db_api.wrap_db_retry(
    max_retries=5, retry_on_deadlock=True, retry_interval=0.05,
    max_retry_interval=1, inc_retry_interval=True)


#: The extra of barbican-retry that installs each database's driver, and
#: the URL that uses it.
_DRIVER_EXTRAS = {'mysql': ('mysql', 'mysql+pymysql://'),
                  'postgresql': ('postgresql', 'postgresql+psycopg2://')}


class MissingDriver(RuntimeError):
    """The Python driver of ``[database] connection`` is not installed;
    the message names the extra that installs it."""


def _missing_driver(url, exc):
    """A ``MissingDriver`` for ``url``, whose driver raised ``exc``."""
    parsed = sa.engine.make_url(url)
    backend = parsed.get_backend_name()
    install = 'install it'
    if backend in _DRIVER_EXTRAS:
        extra, scheme = _DRIVER_EXTRAS[backend]
        install = ("install it with: pip install 'barbican-retry[%s]', "
                   'whose driver a URL %s... uses' % (extra, scheme))
    return MissingDriver(
        '[database] connection %s needs the Python module %s, which is '
        'not installed (%s); %s' % (
            parsed.render_as_string(hide_password=True),
            getattr(exc, 'name', None) or parsed.get_driver_name(), exc,
            install))


def _create_private_sqlite_file(url):
    """Create a new SQLite database file readable by its owner only.

    SQLite would create it by the umask (often world-readable), and its
    -wal and -shm files after it with the same permissions. An existing
    file is left as its owner made it.
    """
    parsed = sa.engine.make_url(url)
    path = parsed.database
    if parsed.get_backend_name() != 'sqlite' or not path or \
            path == ':memory:' or path.startswith('file:') or \
            os.path.exists(path):
        return
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))


def _tune_sqlite(dbapi_connection, connection_record):
    cursor = dbapi_connection.cursor()
    cursor.execute('PRAGMA journal_mode=WAL')
    cursor.execute('PRAGMA busy_timeout=%d' % _SQLITE_BUSY_TIMEOUT_MS)
    cursor.close()


def _read_committed(dbapi_connection, connection_record):
    # NOTE: MariaDB's default, REPEATABLE READ, gives a transaction the
    # rows as they were at its first read. A worker writes a batch of
    # results in one transaction: the second result of the batch would
    # read its order's steps as they were at the first result's read,
    # before another worker committed a parallel step, and both would
    # miss that every step is DONE. READ COMMITTED, PostgreSQL's default,
    # gives each statement the rows as last committed, so the code runs
    # with one set of rules on both. It needs binlog_format ROW or MIXED
    # (MariaDB's default, and what Galera requires).
    cursor = dbapi_connection.cursor()
    cursor.execute('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED')
    cursor.close()


def _keep_connections(null_pool, size, overflow, timeout):
    """Return a QueuePool built like ``null_pool``.

    NOTE: oslo.db gives a SQLite file a NullPool, so every transaction
    would open the file again, run its pragmas and read its schema, which
    costs more than the transaction's own statements. SQLAlchemy opens file
    databases with ``check_same_thread=False``: a connection may move
    between threads, one at a time, which the pool guarantees. Built as
    ``Pool.recreate()`` builds a pool (same creator, same listeners), so
    oslo.db's connect and checkout listeners stay.
    """
    return sa.pool.QueuePool(
        null_pool._creator, pool_size=size, max_overflow=overflow,
        timeout=timeout, recycle=null_pool._recycle,
        reset_on_return=null_pool._reset_on_return,
        _dispatch=null_pool.dispatch, dialect=null_pool._dialect)


def _begin_immediate(connection):
    # NOTE: oslo.db's own "begin" listener, registered before this one,
    # has issued a deferred BEGIN. A deferred transaction takes no lock
    # until its first statement, so replacing it loses nothing. A reader
    # keeps it: it never writes, and needs no write lock to read.
    if connection.get_execution_options().get(_READ_ONLY):
        return
    if connection.connection.dbapi_connection.in_transaction:
        connection.exec_driver_sql('ROLLBACK')
    connection.exec_driver_sql('BEGIN IMMEDIATE')


def _tune_sqlite_engine(engine, options):
    """SQLite: a file keeps its connections (oslo.db gives it none), each
    connection tuned, and write transactions begin IMMEDIATE."""
    if isinstance(engine.pool, sa.pool.NullPool):  # a file
        engine.pool = _keep_connections(
            engine.pool, options.get('max_pool_size') or 5,
            options.get('max_overflow') or 0,
            options.get('pool_timeout') or 30)
    sa.event.listen(engine, 'connect', _tune_sqlite)
    sa.event.listen(engine, 'begin', _begin_immediate)


def _tune_mysql_engine(engine, options):
    """MySQL/MariaDB: every connection at READ COMMITTED."""
    sa.event.listen(engine, 'connect', _read_committed)


#: What each dialect's engine needs beyond oslo.db's, by dialect name.
_TUNE_ENGINE = {'sqlite': _tune_sqlite_engine, 'mysql': _tune_mysql_engine}


class Database:
    """An engine and its session factory.

    Use ``with database.session() as session, session.begin():`` for one
    unit of work, and ``database.repositories`` for the queries on it.
    """

    #: The repositories that work on this database's sessions.
    repositories = repositories.SQL
    #: The API's and operator commands' queries beyond the repositories'
    #: contract (``worker.db.queries``): SQL only, never faked.
    queries = queries.SQL

    def __init__(self, engine):
        self.engine = engine
        self._sessionmaker = orm.sessionmaker(
            bind=engine, expire_on_commit=False)
        # Same pool, tagged so that SQLite begins its transactions deferred.
        self._reader_sessionmaker = orm.sessionmaker(
            bind=engine.execution_options(**{_READ_ONLY: True}),
            expire_on_commit=False)

    @classmethod
    def from_url(cls, url, **kwargs):
        """Build a database from a SQLAlchemy URL.

        oslo.db's engine translates driver errors into its own exceptions
        (``DBDuplicateEntry``, ``DBConnectionError`` …), so a duplicate key
        reads the same on SQLite, PostgreSQL and MariaDB.

        :raises MissingDriver: the database's driver is not installed.
        """
        _create_private_sqlite_file(url)
        try:
            engine = engines.create_engine(url, sqlite_fk=True, **kwargs)
        except ImportError as exc:
            # "No module named 'pymysql'" says nothing of the extra.
            raise _missing_driver(url, exc) from exc
        tune = _TUNE_ENGINE.get(engine.dialect.name)
        if tune is not None:
            tune(engine, kwargs)
            # Connections opened before the listeners were added.
            engine.dispose()
        return cls(engine)

    @classmethod
    def from_conf(cls, conf):
        """Build a database from the ``[database]`` options."""
        group = conf.database
        return cls.from_url(
            group.connection,
            mysql_sql_mode=group.mysql_sql_mode,
            # Galera: with 1, a read waits until this node has applied
            # what other nodes committed before it (doc/install.md).
            mysql_wsrep_sync_wait=group.mysql_wsrep_sync_wait,
            sqlite_synchronous=group.sqlite_synchronous,
            connection_debug=group.connection_debug,
            max_pool_size=group.max_pool_size,
            max_overflow=group.max_overflow,
            pool_timeout=group.pool_timeout,
            connection_recycle_time=group.connection_recycle_time,
            max_retries=group.max_retries,
            retry_interval=group.retry_interval)

    def session(self):
        """Return a new session; the caller begins and ends transactions."""
        return self._sessionmaker()

    def reader(self):
        """Return a new session for transactions that only read.

        On SQLite its transactions begin deferred: they take no write lock,
        so a reader neither waits for a writer nor makes one wait. Writing
        through it is a programming error (SQLite may refuse it as busy).
        """
        return self._reader_sessionmaker()

    def dispose(self):
        """Close every pooled connection."""
        self.engine.dispose()
