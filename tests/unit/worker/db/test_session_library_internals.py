"""SQLAlchemy and oslo.db internals that worker/db/session.py relies on.

``_keep_connections()`` turns the NullPool oslo.db gives a SQLite file into
a QueuePool the way SQLAlchemy's own ``Pool.recreate()`` does: it reads the
pool's private ``_creator``, ``_recycle``, ``_reset_on_return`` and
``_dialect`` and passes its ``dispatch`` (the listeners) to the private
``_dispatch=`` keyword. ``_begin_immediate()`` replaces the deferred BEGIN
that oslo.db's own "begin" listener issues, reading
``connection.connection.dbapi_connection.in_transaction``.

Each test checks one of these by behaviour and names, when it fails, the
library that changed and the code that depends on it. The versions they
were checked on are written beside the bounds in requirements.txt.
"""

import os
import sqlite3

from oslo_db.sqlalchemy import engines
import pytest
import sqlalchemy as sa

from worker.db import session as db_session

_KEEP = 'worker/db/session.py _keep_connections()'
_FROM_URL = 'worker/db/session.py Database.from_url()'
_BEGIN = 'worker/db/session.py _begin_immediate()'

# Distinctive, so that a default cannot pass for it.
_RECYCLE_SECONDS = 1234


def _url(path):
    return 'sqlite:///%s' % path


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / 'internals.sqlite'


@pytest.fixture
def engine(db_path):
    """An oslo.db engine for a SQLite file, built as from_url() builds it."""
    engine = engines.create_engine(
        _url(db_path), sqlite_fk=True,
        connection_recycle_time=_RECYCLE_SECONDS)
    yield engine
    engine.dispose()


def _keep_connections(null_pool):
    """_keep_connections(), failing clearly if QueuePool refuses it."""
    try:
        return db_session._keep_connections(null_pool, 3, 2, 7)
    except TypeError as exc:
        pytest.fail('SQLAlchemy: sa.pool.QueuePool() no longer accepts the '
                    'keywords %s passes (recycle=, reset_on_return=, '
                    'private _dispatch=, dialect=): %s' % (_KEEP, exc))


def _keep_in_place(engine):
    """The QueuePool _keep_connections() builds, in place on ``engine``."""
    engine.pool = _keep_connections(engine.pool)
    return engine.pool


def test_oslo_db_gives_a_sqlite_file_a_null_pool(engine):
    """from_url() replaces only a NullPool: oslo.db must still give one."""
    assert isinstance(engine.pool, sa.pool.NullPool), (
        'oslo.db no longer gives a SQLite file a NullPool (it gave %s): '
        '%s replaces only a NullPool with the QueuePool of '
        '_keep_connections(); see whether the new pool keeps connections '
        'and what it carries' % (type(engine.pool).__name__, _FROM_URL))


@pytest.mark.parametrize('name', [
    '_creator', '_recycle', '_reset_on_return', '_dialect', 'dispatch'])
def test_the_null_pool_has_the_attributes_read(engine, name):
    """Every attribute _keep_connections() reads exists on the pool."""
    assert hasattr(engine.pool, name), (
        'SQLAlchemy: the pool (%s) has no attribute %s any more: %s reads '
        'it to build its QueuePool as Pool.recreate() did'
        % (type(engine.pool).__name__, name, _KEEP))


def test_the_null_pool_attributes_mean_what_they_did(engine):
    """Creator, recycle time, reset style and dialect of the engine."""
    pool = engine.pool
    creator = pool._creator
    assert callable(creator), (
        'SQLAlchemy: Pool._creator is no longer the connection factory '
        '(%r): %s passes it to QueuePool as its creator' % (creator, _KEEP))
    dbapi_connection = creator()
    try:
        assert isinstance(dbapi_connection, sqlite3.Connection), (
            'SQLAlchemy: Pool._creator() no longer returns a DB-API '
            'connection (%r): %s passes it to QueuePool as its creator'
            % (dbapi_connection, _KEEP))
    finally:
        dbapi_connection.close()
    assert pool._recycle == _RECYCLE_SECONDS, (
        'SQLAlchemy: Pool._recycle is no longer the recycle time in '
        'seconds (oslo.db connection_recycle_time=%d gave %r): %s passes '
        'it as recycle=' % (_RECYCLE_SECONDS, pool._recycle, _KEEP))
    assert pool._reset_on_return is sa.pool.reset_rollback, (
        'SQLAlchemy: Pool._reset_on_return is no longer the reset style '
        'sa.pool.reset_rollback (it is %r): %s passes it as '
        'reset_on_return=' % (pool._reset_on_return, _KEEP))
    assert pool._dialect is engine.dialect, (
        "SQLAlchemy: Pool._dialect is no longer the engine's dialect "
        '(%r): %s passes it as dialect=' % (pool._dialect, _KEEP))


def test_the_kept_pool_serves_the_engine_and_keeps_connections(engine):
    """A QueuePool of the size asked for, reusing one DB-API connection."""
    kept_pool = _keep_in_place(engine)
    assert isinstance(kept_pool, sa.pool.QueuePool)
    assert (kept_pool.size(), kept_pool.timeout()) == (3, 7), (
        'SQLAlchemy: QueuePool(pool_size=3, timeout=7) reports size %r '
        'and timeout %r: %s' % (kept_pool.size(), kept_pool.timeout(),
                                _KEEP))
    with engine.connect() as connection:
        assert connection.scalar(sa.text('SELECT 1')) == 1
        assert kept_pool.checkedout() == 1, (
            'SQLAlchemy: an engine no longer connects through the pool '
            'assigned to engine.pool: %s sets it' % _FROM_URL)
        first = connection.connection.dbapi_connection
    with engine.connect() as connection:
        again = connection.connection.dbapi_connection
    assert again is first, (
        'SQLAlchemy: the QueuePool built by %s opened a new connection '
        'instead of reusing the one returned to it' % _KEEP)


def test_the_kept_pool_keeps_oslo_db_listeners(engine):
    """_dispatch= copies the listeners oslo.db put on the NullPool."""
    _keep_in_place(engine)
    message = (
        'SQLAlchemy: QueuePool(_dispatch=pool.dispatch) no longer copies '
        "the pool's listeners: oslo.db's connect listener (%s) is missing "
        'on the pool %s builds')
    with engine.connect() as connection:
        foreign_keys = connection.exec_driver_sql(
            'PRAGMA foreign_keys').scalar()
        assert foreign_keys == 1, message % (
            'PRAGMA foreign_keys=ON of sqlite_fk=True', _KEEP)
        matches = connection.exec_driver_sql(
            "SELECT 'barbican' REGEXP 'bic'").scalar()
        assert matches == 1, message % ('the REGEXP function', _KEEP)
        assert connection.connection.info.get('pid') == os.getpid(), (
            message % ('the process guard recording the pid', _KEEP))


def test_the_kept_pool_has_the_same_listeners(engine):
    """Same connect and checkout listeners, in the same order."""
    null_pool = engine.pool
    for event in ('connect', 'checkout'):
        assert list(getattr(null_pool.dispatch, event)), (
            'oslo.db no longer puts a %s listener on the pool: %s '
            'assumes the NullPool carries them' % (event, _KEEP))
    kept = _keep_connections(null_pool)
    try:
        for event in ('connect', 'checkout', 'checkin'):
            assert (list(getattr(kept.dispatch, event)) ==
                    list(getattr(null_pool.dispatch, event))), (
                'SQLAlchemy: QueuePool(_dispatch=pool.dispatch) gives the '
                'new pool other %s listeners than the pool it was built '
                'from: %s relies on it to keep oslo.db\'s' % (event, _KEEP))
    finally:
        kept.dispose()


def test_the_kept_pool_keeps_recycle_dialect_and_rollback(engine):
    """The values read are the values the new pool runs with."""
    kept_pool = _keep_in_place(engine)
    assert kept_pool._recycle == _RECYCLE_SECONDS, (
        'SQLAlchemy: QueuePool(recycle=%d) keeps %r in _recycle: %s'
        % (_RECYCLE_SECONDS, kept_pool._recycle, _KEEP))
    assert kept_pool._dialect is engine.dialect, (
        "SQLAlchemy: QueuePool(dialect=engine.dialect) keeps %r, not the "
        "engine's dialect: %s" % (kept_pool._dialect, _KEEP))
    # reset_on_return: a connection given back inside a transaction comes
    # back out rolled back.
    raw = kept_pool.connect()
    dbapi_connection = raw.dbapi_connection
    dbapi_connection.execute('CREATE TABLE t (x INTEGER)')
    dbapi_connection.execute('BEGIN')
    dbapi_connection.execute('INSERT INTO t VALUES (1)')
    raw.close()
    raw = kept_pool.connect()
    try:
        assert raw.dbapi_connection is dbapi_connection
        assert not dbapi_connection.in_transaction, (
            'SQLAlchemy: the QueuePool built with reset_on_return='
            'pool._reset_on_return no longer rolls back a connection '
            'given back in a transaction: %s' % _KEEP)
        count = dbapi_connection.execute('SELECT count(*) FROM t')
        assert count.fetchone()[0] == 0
    finally:
        raw.close()


def test_in_transaction_tells_whether_a_begin_was_issued(engine):
    """The attribute _begin_immediate() reads, on the connection it reads."""
    with engine.connect() as connection:
        dbapi_connection = connection.connection.dbapi_connection
        assert isinstance(dbapi_connection, sqlite3.Connection), (
            'SQLAlchemy: connection.connection.dbapi_connection is no '
            'longer the sqlite3 connection (%r): %s reads its '
            'in_transaction' % (dbapi_connection, _BEGIN))
        assert dbapi_connection.in_transaction is False
        connection.begin()
        # oslo.db's "begin" listener issues a deferred BEGIN.
        assert dbapi_connection.in_transaction is True, (
            "oslo.db's begin listener no longer issues a BEGIN on SQLite, "
            "or sqlite3's in_transaction no longer reports it: %s reads "
            'in_transaction to roll that BEGIN back before its BEGIN '
            'IMMEDIATE; check that its NOTE still holds' % _BEGIN)
        connection.rollback()


def test_a_writer_transaction_holds_the_write_lock_from_its_begin(db_path):
    """from_url(): BEGIN IMMEDIATE replaced oslo.db's deferred BEGIN."""
    try:
        database = db_session.Database.from_url(_url(db_path))
    except TypeError as exc:
        pytest.fail('SQLAlchemy: sa.pool.QueuePool() no longer accepts the '
                    'keywords %s passes (recycle=, reset_on_return=, '
                    'private _dispatch=, dialect=), so %s fails on a '
                    'SQLite file: %s' % (_KEEP, _FROM_URL, exc))
    other = sqlite3.connect(str(db_path), timeout=0,
                            isolation_level=None)
    try:
        assert isinstance(database.engine.pool, sa.pool.QueuePool), (
            '%s left a SQLite file without a QueuePool (%s): see '
            "oslo.db's pool class and %s"
            % (_FROM_URL, type(database.engine.pool).__name__, _KEEP))
        with database.engine.connect() as connection:
            try:
                connection.begin()
            except sa.exc.OperationalError as exc:
                pytest.fail(
                    "%s could not replace oslo.db's BEGIN on SQLite "
                    '(oslo.db or SQLAlchemy changed how a transaction '
                    'begins): %s' % (_BEGIN, exc))
            with pytest.raises(sqlite3.OperationalError, match='locked'):
                other.execute('BEGIN IMMEDIATE')
                other.execute('ROLLBACK')
                pytest.fail(
                    'A transaction of %s took no write lock at its begin: '
                    "%s no longer replaces oslo.db's deferred BEGIN (oslo.db "
                    'or SQLAlchemy changed how a transaction begins)'
                    % (_FROM_URL, _BEGIN))
            connection.exec_driver_sql('CREATE TABLE t (x INTEGER)')
            connection.commit()
    finally:
        other.close()
        database.dispose()
