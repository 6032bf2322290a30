"""Engines and sessions, built per process from the ``[database]`` group.

There is no global session: a service builds one ``Database`` in its
``start()`` (after any fork) and hands sessions to repository functions.
"""

import sqlalchemy as sa
from oslo_db.sqlalchemy import engines
from sqlalchemy import orm

# NOTE: several processes share one SQLite file in the embedded setup.
# WAL lets readers run beside the writer; the busy timeout makes a writer
# wait for the lock instead of failing at once. Transactions begin
# IMMEDIATE (write lock first): a deferred transaction that reads and then
# writes gets SQLITE_BUSY at once, without waiting, when another
# connection wrote in between.
_SQLITE_BUSY_TIMEOUT_MS = 30000


def _tune_sqlite(dbapi_connection, connection_record):
    cursor = dbapi_connection.cursor()
    cursor.execute('PRAGMA journal_mode=WAL')
    cursor.execute('PRAGMA busy_timeout=%d' % _SQLITE_BUSY_TIMEOUT_MS)
    cursor.close()


def _begin_immediate(connection):
    # NOTE: oslo.db's own "begin" listener, registered before this one,
    # has issued a deferred BEGIN. A deferred transaction takes no lock
    # until its first statement, so replacing it loses nothing.
    if connection.connection.dbapi_connection.in_transaction:
        connection.exec_driver_sql('ROLLBACK')
    connection.exec_driver_sql('BEGIN IMMEDIATE')


class Database:
    """An engine and its session factory.

    Use ``with database.session() as session, session.begin():`` for one
    unit of work.
    """

    def __init__(self, engine):
        self.engine = engine
        self._sessionmaker = orm.sessionmaker(
            bind=engine, expire_on_commit=False)

    @classmethod
    def from_url(cls, url, **kwargs):
        """Build a database from a SQLAlchemy URL.

        oslo.db's engine translates driver errors into its own exceptions
        (``DBDuplicateEntry``, ``DBConnectionError`` …), so a duplicate key
        reads the same on SQLite, PostgreSQL and MariaDB.
        """
        engine = engines.create_engine(url, sqlite_fk=True, **kwargs)
        if engine.dialect.name == 'sqlite':
            sa.event.listen(engine, 'connect', _tune_sqlite)
            sa.event.listen(engine, 'begin', _begin_immediate)
            # Connections opened before the listener was added.
            engine.dispose()
        return cls(engine)

    @classmethod
    def from_conf(cls, conf):
        """Build a database from the ``[database]`` options."""
        group = conf.database
        return cls.from_url(
            group.connection,
            mysql_sql_mode=group.mysql_sql_mode,
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

    def dispose(self):
        """Close every pooled connection."""
        self.engine.dispose()
