"""One retry pass against a real database, with a recording RPC client."""

import datetime
import json

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import sqlalchemy as sa

from scheduler import manager
from tests import config
from tests import fakes
from tests.functional import counting
from tests import singular
from worker.db import locks
from worker.db import models
from worker.db import retry_tasks
from worker.db import services
from worker import rpcapi

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)
LOCK = models.ORDER_RETRY_TASK_LOCK


def _conf(**overrides):
    defaults = {'scheduler.batch_size': 7, 'host': 'test-host'}
    defaults.update(overrides)
    return config.make_conf(**defaults)


def _make_orders(database, count, due_in=-1):
    """Create PENDING orders each with one retry row due at NOW+due_in."""
    with database.session() as session, session.begin():
        return [counting.waiting_order(session, NOW, retry_at=NOW + (
            datetime.timedelta(seconds=due_in, milliseconds=i)))
            for i in range(count)]


def _run(database, conf=None, client=None, now=NOW):
    client = client or fakes.RecordingRPCClient()
    retry_manager = manager.RetryManager(conf or _conf(), database,
                                         rpcapi.WorkerAPI(client))
    return retry_manager.run_once(now), client


def _pending(database, parked=False):
    with database.session() as session:
        return retry_tasks.list_tasks(session, parked=parked)


def test_due_rows_are_cast_once_and_deleted(database):
    due = _make_orders(database, 20)
    later = _make_orders(database, 3, due_in=60)
    result, client = _run(database)
    assert result.locked and result.dispatched == 20
    assert client.count_by_order() == {order_id: 1 for order_id in due}
    assert {t.order_id for t in _pending(database)} == set(later)
    assert client.casts[0] == ('check_certificate_status',
                               {'order_id': due[0], 'generation': 0})
    with database.session() as session:
        assert locks.get(session, LOCK) is None


def test_rows_are_cast_oldest_first(database):
    due = _make_orders(database, 10)
    _, client = _run(database, _conf(**{'scheduler.cast_concurrency': 1}))
    assert [kwargs['order_id'] for _, kwargs in client.casts] == due


def test_failed_cast_keeps_its_row_and_others_go(database):
    due = _make_orders(database, 10)
    unlucky = set(due[2:4])
    client = fakes.RecordingRPCClient(
        fail=lambda method, kwargs: kwargs['order_id'] in unlucky)
    result, _ = _run(database, _conf(**{'scheduler.rows_per_cast': 1}),
                     client=client)
    assert result.dispatched == 8 and result.cast_failures == 2
    assert {t.order_id for t in _pending(database)} == unlucky
    # The next pass, with the broker back, sends them.
    result, client = _run(database)
    assert set(client.count_by_order()) == unlucky


def test_rows_go_several_per_message_and_a_failed_one_keeps_them_all(
        database):
    due = _make_orders(database, 20)
    client = fakes.RecordingRPCClient(
        fail=lambda method, kwargs: kwargs['order_id'] == due[12])
    conf = _conf(**{'scheduler.batch_size': 20, 'scheduler.rows_per_cast': 5,
                    'scheduler.cast_concurrency': 2})
    result, _ = _run(database, conf, client=client)

    # Four messages of five rows, oldest first; the third one failed.
    assert [len(kwargs['steps']) for _, _, kwargs in client.messages] == \
        [5, 5, 5]
    assert result.dispatched == 15 and result.cast_failures == 5
    assert {t.order_id for t in _pending(database)} == set(due[10:15])


def test_a_small_batch_is_spread_over_cast_concurrency_messages(database):
    _make_orders(database, 6)
    conf = _conf(**{'scheduler.rows_per_cast': 50,
                    'scheduler.cast_concurrency': 3})
    result, client = _run(database, conf)
    assert result.dispatched == 6
    assert sorted(len(kwargs['steps'])
                  for _, _, kwargs in client.messages) == [2, 2, 2]


def _insert_raw_row(database, order_id, retry_task, args, kwargs):
    with database.session() as session, session.begin():
        session.execute(sa.insert(models.OrderRetryTask).values(
            order_id=order_id, retry_task=retry_task, retry_at=NOW,
            retry_args=args, retry_kwargs=kwargs, retry_count=0,
            parked=False, created_at=NOW))


def _without_foreign_keys(database, statement):
    """Run ``statement`` with foreign keys off (to make an orphan row)."""
    # A plain engine: the service engine turns SQLite's foreign keys on.
    engine = sa.create_engine(
        database.engine.url.render_as_string(hide_password=False),
        poolclass=sa.pool.NullPool)
    with engine.connect() as connection:
        if engine.dialect.name == 'mysql':
            connection.exec_driver_sql('SET foreign_key_checks=0')
        elif engine.dialect.name == 'postgresql':
            # Turning checks off needs a superuser; this database is the
            # test's own, so drop the constraint instead.
            connection.exec_driver_sql(
                'ALTER TABLE order_retry_tasks DROP CONSTRAINT '
                'fk_order_retry_tasks_order_id_orders')
        connection.execute(statement)
        connection.commit()
    engine.dispose()


def test_bad_rows_are_parked_and_do_not_block_good_ones(database):
    good = _make_orders(database, 12)
    victims = _make_orders(database, 3, due_in=-100)
    _insert_raw_row(database, victims[0], 'format_hard_disk',
                    json.dumps([victims[0]]), '{}')
    _insert_raw_row(database, victims[1], 'check_certificate_status',
                    '[not json', '{}')
    _insert_raw_row(database, victims[2], 'check_certificate_status',
                    json.dumps([victims[2]]), json.dumps({'bogus': 1}))
    _without_foreign_keys(database, sa.insert(models.OrderRetryTask).values(
        order_id='00000000-0000-0000-0000-000000000000',
        retry_task='check_certificate_status', retry_at=NOW,
        retry_args='["00000000-0000-0000-0000-000000000000"]',
        retry_kwargs='{"generation": 0}', retry_count=0, parked=False,
        created_at=NOW))

    result, client = _run(database)

    assert set(good) <= set(client.count_by_order())
    assert result.parked == 4
    reasons = sorted(t.park_reason for t in _pending(database, parked=True))
    assert any('has no step format_hard_disk' in r for r in reasons)
    assert any('not valid JSON' in r for r in reasons)
    assert any('do not fit' in r for r in reasons)
    orphan = 'order 00000000-0000-0000-0000-000000000000 '
    assert any(r.startswith(orphan) and 'no longer exists' in r
               for r in reasons)
    # Parked rows are never due again: the next pass casts nothing.
    result, client = _run(database)
    assert result.parked == 0 and client.casts == []


def test_fresh_lock_of_another_daemon_makes_the_pass_skip(database):
    _make_orders(database, 5)
    with database.session() as session, session.begin():
        locks.insert(session, LOCK, 'other-host', 'other-token',
                     NOW - datetime.timedelta(seconds=10))
    result, client = _run(database)
    assert not result.locked and client.casts == []
    with database.session() as session:
        assert locks.get(session, LOCK).owner_token == 'other-token'


def test_stale_lock_is_cleared_and_the_pass_proceeds(database):
    _make_orders(database, 5)
    conf = _conf(**{'scheduler.retry_lock_timeout_seconds': 300})
    with database.session() as session, session.begin():
        locks.insert(session, LOCK, 'dead-host', 'dead-token',
                     NOW - datetime.timedelta(seconds=301))
    result, client = _run(database, conf)
    assert result.stale_lock_cleared and result.locked
    assert result.dispatched == 5
    with database.session() as session:
        assert locks.get(session, LOCK) is None


def test_lock_of_a_daemon_that_stopped_heartbeating_is_cleared(database):
    _make_orders(database, 3)
    conf = _conf(**{'service_down_time': 60, 'report_interval': 10})
    taken = NOW - datetime.timedelta(seconds=61)     # not 300 s old
    with database.session() as session, session.begin():
        locks.insert(session, LOCK, '123@dead-host', 'dead-token', taken)
        services.heartbeat(session, '123@dead-host', 'scheduler',
                           'dead-host', 123, taken)
    result, client = _run(database, conf)
    assert result.stale_lock_cleared and result.dispatched == 3


def test_lock_of_a_live_daemon_is_kept_however_old(database):
    _make_orders(database, 3)
    conf = _conf(**{'service_down_time': 60, 'report_interval': 10})
    with database.session() as session, session.begin():
        locks.insert(session, LOCK, '7@live-host', 'live-token',
                     NOW - datetime.timedelta(seconds=200))
        services.heartbeat(session, '7@live-host', 'scheduler',
                           'live-host', 7, NOW)
    result, client = _run(database, conf)
    assert not result.stale_lock_cleared and not result.locked
    assert client.casts == []


class _StealLockClient(fakes.RecordingRPCClient):
    """Lets another daemon take the lock while our batch is being cast."""

    def __init__(self, database):
        super().__init__()
        self._database = database

    def cast(self, ctxt, method, **kwargs):
        super().cast(ctxt, method, **kwargs)
        with self._database.session() as session, session.begin():
            session.execute(sa.update(models.EntityLock).values(
                owner_token='thief', worker_host_name='thief-host'))


class _FastWorkerClient(fakes.RecordingRPCClient):
    """While the batch is cast, a worker replaces the first order's row.

    As a worker that ran the step and asks for another try does: it
    deletes the row the pass is casting and writes a new one. That row has
    the highest id, which SQLite without AUTOINCREMENT would give again to
    the new row.
    """

    def __init__(self, database, moved):
        super().__init__()
        self._database = database
        self._moved = moved
        self.replaced = None

    def cast(self, ctxt, method, **kwargs):
        super().cast(ctxt, method, **kwargs)
        if self.replaced is not None:
            return
        with self._database.session() as session, session.begin():
            [row] = retry_tasks.list_tasks(session, order_id=self._moved)
            retry_tasks.delete_for_order(session, self._moved)
            new_id = singular.add_retry(retry_tasks, session, self._moved,
                                        'check_certificate_status',
                                        NOW + datetime.timedelta(seconds=30),
                                        args=[self._moved],
                                        kwargs={'generation': 1}, now=NOW)
        self.replaced = (row.id, new_id)


def test_a_row_replaced_while_cast_is_kept(database):
    [moved] = _make_orders(database, 1)
    client = _FastWorkerClient(database, moved)

    result, _ = _run(database, client=client)

    assert result.dispatched == 1
    # The new row has an id of its own, and the pass, which deletes the
    # rows it cast by id, left it alone.
    cast_id, new_id = client.replaced
    assert new_id > cast_id
    [kept] = _pending(database)
    assert (kept.id, kept.order_id) == (new_id, moved)


def test_lost_lock_stops_the_pass_without_deleting(database):
    _make_orders(database, 10)
    client = _StealLockClient(database)
    conf = _conf(**{'scheduler.cast_concurrency': 1})
    result, _ = _run(database, conf, client)
    assert result.lock_lost
    # The first batch was cast but not deleted; no second batch was cast.
    assert len(client.casts) == 7
    assert len(_pending(database)) == 10
    with database.session() as session:
        # Our release did not remove the thief's lock.
        assert locks.get(session, LOCK).owner_token == 'thief'


def _statements(database):
    """Collect the SQL statements the engine runs from now on."""
    seen = []

    def record(conn, cursor, statement, parameters, context, executemany):
        seen.append(' '.join(statement.split()).upper())
    sa.event.listen(database.engine, 'before_cursor_execute', record)
    return seen


def test_a_pass_with_nothing_due_only_reads(database):
    _make_orders(database, 3, due_in=60)
    retry_manager = manager.RetryManager(
        _conf(), database, rpcapi.WorkerAPI(fakes.RecordingRPCClient()))
    statements = _statements(database)
    # Recovery is due at the start; it too finds nothing to do.
    result = retry_manager.run_once(NOW)

    assert result.idle and not result.locked and not result.dispatched
    # No write, and on SQLite no write lock either (BEGIN IMMEDIATE).
    assert any(s.startswith('SELECT') for s in statements)
    assert all(s.split()[0] in ('SELECT', 'BEGIN', 'COMMIT', 'ROLLBACK')
               for s in statements), statements
    assert 'BEGIN IMMEDIATE' not in statements
    # Once its row is due, the same daemon takes the lock and casts it.
    result = retry_manager.run_once(NOW + datetime.timedelta(seconds=61))
    assert result.locked and result.dispatched == 3


# Text a database column holds on every backend: no NUL (PostgreSQL
# refuses it in text), no lone surrogates (not UTF-8).
_TEXT = st.text(st.characters(blacklist_categories=('Cs',),
                              blacklist_characters='\x00'), max_size=200)


def test_generated_bad_rows_are_parked_with_a_reason_and_never_crash(
        database):
    """Rows written straight into the table, of any content: each pass
    parks the bad ones with a reason and casts the good one beside them.
    """
    good = _make_orders(database, 1)
    [order_id] = _make_orders(database, 1, due_in=-100)
    steps = st.sampled_from(['check_certificate_status',
                             'process_type_order']) | \
        st.text(max_size=64).filter(lambda name: '\x00' not in name)
    arguments = _TEXT | st.sampled_from([
        '[]', '{}', 'null', '[1, 2, 3]', json.dumps([order_id]),
        json.dumps({'generation': -1}), json.dumps({'generation': 2 ** 70}),
        json.dumps({'generation': '0'}), '[' * 5000 + ']' * 5000])
    passes = []

    @settings(max_examples=60, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(step=steps, args=arguments, kwargs=arguments)
    def one_bad_row(step, args, kwargs):
        _insert_raw_row(database, order_id, step, args, kwargs)
        result, client = _run(database)
        passes.append(result)
        parked = _pending(database, parked=True)
        assert all(row.park_reason for row in parked)
        # Not parked: cast (a row that happens to be well formed).
        assert _pending(database) == []

    one_bad_row()
    assert sum(result.parked for result in passes) >= 50
    # The good row went with the first pass, beside the first bad one.
    assert passes[0].dispatched >= 1
    assert good[0] not in {row.order_id
                           for row in _pending(database, parked=True)}
