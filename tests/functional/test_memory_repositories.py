"""The in-memory repositories behave as the SQL ones, on every backend.

Each contract test runs against ``worker.db.memory.InMemoryDatabase`` and
against a migrated database on SQLite, PostgreSQL and MariaDB, through
``db.repositories`` and ``db.session()``/``db.reader()`` only: the fake
cannot drift from what it stands in for. The memory variants need no
server (``-k memory``).
"""

import datetime
import inspect
import threading

from oslo_db import exception as db_exc
import pytest
from sqlalchemy import exc as sa_exc

from tests.functional import databases
from worker.db import memory
from worker.db import models
from worker.db import repositories
from worker.db import retry_tasks

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)

contract = pytest.mark.parametrize('backend',
                                   ('memory',) + databases.BACKENDS)


def _at(seconds):
    return NOW + datetime.timedelta(seconds=seconds)


@pytest.fixture
def db(request, backend):
    """An in-memory database, or a migrated one on a real backend."""
    if backend == 'memory':
        return memory.InMemoryDatabase()
    return request.getfixturevalue('database')


def _write(db, call, *args, **kwargs):
    """Run one repository call in a transaction of its own."""
    with db.session() as session, session.begin():
        return call(session, *args, **kwargs)


def _read(db, call, *args, **kwargs):
    """Run one repository call in a read-only transaction."""
    with db.reader() as session, session.begin():
        return call(session, *args, **kwargs)


def _order(db, at=NOW, meta=None):
    return _write(db, db.repositories.orders.create, 'certificate',
                  meta or {}, at).id


def _claimed(db, owner, at=NOW):
    order_id = _order(db, at)
    assert _write(db, db.repositories.orders.claim, order_id, 0, at, owner)
    return order_id


def _public_functions(module):
    return {name: function for name, function in vars(module).items()
            if inspect.isfunction(function) and not name.startswith('_') and
            function.__module__ == module.__name__}


@pytest.mark.parametrize('aggregate', ('locks', 'orders', 'retry_tasks',
                                       'services'))
def test_fake_has_every_sql_function_with_its_signature(aggregate):
    sql = _public_functions(getattr(repositories.SQL, aggregate))
    fake = getattr(memory.InMemoryDatabase().repositories, aggregate)
    public = {name for name in dir(fake) if not name.startswith('_')}

    assert public == set(sql)
    for name, function in sql.items():
        assert (inspect.signature(getattr(fake, name)) ==
                inspect.signature(function)), name


@contract
def test_create_get_and_list_orders(db):
    repos = db.repositories
    first = _write(db, repos.orders.create, 'certificate',
                   {'pair': (1, 2)}, _at(1))
    second = _order(db, at=_at(0))
    third = _order(db, at=_at(2))
    _write(db, repos.orders.fail, third, 0, _at(3), 'no')

    assert (first.status, first.generation, first.step, first.attempt,
            first.owner, first.claimed_at, first.dispatched_at,
            first.created_at) == (models.PENDING, 0, 'process_type_order',
                                  0, None, None, _at(1), _at(1))
    with db.session() as session:  # a read without begin()
        order = repos.orders.get(session, first.id)
        assert repos.orders.get(session, 'missing') is None
    assert order.meta == {'pair': [1, 2]}  # as JSON gives it back
    assert (order.type, order.error_reason, order.updated_at) == (
        'certificate', None, _at(1))
    assert set(_read(db, repos.orders.get_many,
                     [first.id, 'missing'])) == {first.id}
    assert _read(db, repos.orders.get_many, []) == {}
    assert [o.id for o in _read(db, repos.orders.list_orders)] == [
        second, first.id, third]
    assert [o.id for o in _read(db, repos.orders.list_orders,
                                status=models.PENDING, limit=1)] == [second]
    assert _read(db, repos.orders.count_by_status) == {models.PENDING: 2,
                                                       models.ERROR: 1}


@contract
def test_claim_and_results_are_fenced_by_generation(db):
    orders = db.repositories.orders
    order_id = _order(db, meta={'a': 1, 'b': 2})

    assert _write(db, orders.claim, order_id, 0, _at(1), 'w1@h')
    assert not _write(db, orders.claim, order_id, 0, _at(1), 'w2@h')
    assert not _write(db, orders.claim, 'missing', 0, _at(1), 'w2@h')
    order = _read(db, orders.get, order_id)
    assert (order.generation, order.owner, order.claimed_at,
            order.dispatched_at, order.updated_at) == (
        1, 'w1@h', _at(1), None, _at(1))

    assert not _write(db, orders.schedule_step, order_id, 0, _at(2),
                      'check', 1)
    assert _write(db, orders.schedule_step, order_id, 1, _at(2), 'check', 3)
    order = _read(db, orders.get, order_id)
    assert (order.generation, order.step, order.attempt, order.owner,
            order.claimed_at) == (1, 'check', 3, None, None)

    assert not _write(db, orders.complete, order_id, 0, _at(3), {'b': 9})
    assert _write(db, orders.complete, order_id, 1, _at(3), {'b': 9})
    order = _read(db, orders.get, order_id)
    assert (order.status, order.step, order.meta) == (
        models.ACTIVE, None, {'a': 1, 'b': 9})

    # A finished order takes no further write, even with its own token.
    assert not _write(db, orders.claim, order_id, 1, _at(4), 'w1@h')
    assert not _write(db, orders.fail, order_id, 1, _at(4), 'late')
    assert not _write(db, orders.take_back, order_id, 1, _at(4))
    assert not _write(db, orders.cancel, order_id, _at(4), 'late')
    assert _read(db, orders.get, order_id).status == models.ACTIVE


@contract
def test_fail_take_back_and_cancel(db):
    orders = db.repositories.orders
    failed, taken, cancelled = (_claimed(db, 'w1@h') for _ in range(3))

    assert _write(db, orders.fail, failed, 1, _at(1), 'broken')
    order = _read(db, orders.get, failed)
    assert (order.status, order.error_reason, order.step, order.owner) == (
        models.ERROR, 'broken', None, None)

    assert not _write(db, orders.take_back, taken, 0, _at(1))
    assert _write(db, orders.take_back, taken, 1, _at(1))
    order = _read(db, orders.get, taken)
    assert (order.status, order.generation, order.owner,
            order.dispatched_at) == (models.PENDING, 2, None, None)

    assert _write(db, orders.cancel, cancelled, _at(1), 'operator')
    assert not _write(db, orders.cancel, cancelled, _at(2), 'again')
    assert not _write(db, orders.cancel, 'missing', _at(2), 'again')
    order = _read(db, orders.get, cancelled)
    assert (order.status, order.generation, order.error_reason, order.step,
            order.owner, order.updated_at) == (
        models.ERROR, 2, 'operator', None, None, _at(1))
    # The step still running on the old token has no effect.
    assert not _write(db, orders.complete, cancelled, 1, _at(3), {})


@contract
def test_mark_dispatched_leaves_claimed_and_finished_orders_alone(db):
    orders = db.repositories.orders
    waiting = _order(db)
    claimed = _claimed(db, 'w1@h')
    finished = _claimed(db, 'w1@h')
    _write(db, orders.complete, finished, 1, NOW, {})

    _write(db, orders.mark_dispatched, {waiting, claimed, finished}, _at(5))
    _write(db, orders.mark_dispatched, [], _at(6))

    got = _read(db, orders.get_many, [waiting, claimed, finished])
    assert got[waiting].dispatched_at == _at(5)
    assert got[claimed].dispatched_at is None
    assert got[finished].dispatched_at is None


@contract
def test_lost_dispatches(db):
    repos = db.repositories
    # Cast latest first: neither insertion nor id order is the answer.
    lost = [_order(db, at=_at(seconds)) for seconds in (5, 4, 3, 2, 1)]
    _claimed(db, 'w1@h', at=_at(0))
    waiting = _order(db, at=_at(0))
    _write(db, repos.retry_tasks.add, waiting, 'check', _at(9))
    _order(db, at=_at(10))  # cast after the cutoff

    rows = _read(db, repos.orders.lost_dispatches, _at(10), 10)
    assert [(row.id, row.generation, row.step, row.attempt, row.owner)
            for row in rows] == [(order_id, 0, 'process_type_order', 0, None)
                                 for order_id in reversed(lost)]
    assert [row.id for row in _read(db, repos.orders.lost_dispatches,
                                    _at(10), 2)] == lost[:-3:-1]


@contract
def test_owners_and_owned_by(db):
    repos = db.repositories
    first, second = _claimed(db, 'w1@h'), _claimed(db, 'w2@h')
    retried = _claimed(db, 'w1@h')
    _write(db, repos.retry_tasks.add, retried, 'check', NOW)
    _order(db)

    assert _read(db, repos.orders.owners) == {'w1@h', 'w2@h'}
    rows = _read(db, repos.orders.owned_by, ['w1@h', 'dead@h'], 10)
    assert [(row.id, row.generation, row.step, row.attempt, row.owner)
            for row in rows] == [(first, 1, 'process_type_order', 0,
                                  'w1@h')]
    assert {row.id for row in _read(db, repos.orders.owned_by,
                                    {'w1@h', 'w2@h'}, 10)} == {first,
                                                               second}
    assert len(_read(db, repos.orders.owned_by, ['w1@h', 'w2@h'], 1)) == 1
    assert _read(db, repos.orders.owned_by, [], 10) == []


def _tasks(db, *specs):
    """Add one retry row per (order_id, retry_at); returns their ids."""
    with db.session() as session, session.begin():
        return [db.repositories.retry_tasks.add(
            session, order_id, 'check', retry_at, args=[order_id],
            kwargs={'generation': 1}).id for order_id, retry_at in specs]


@contract
def test_add_and_get_retry_rows(db):
    tasks = db.repositories.retry_tasks
    order_id = _order(db)
    task = _write(db, tasks.add, order_id, 'check', _at(5), args=('x', 1),
                  kwargs={'generation': 2}, retry_count=3)
    bare = _write(db, tasks.add, order_id, 'check', _at(6), now=_at(1))

    assert bare.id > task.id
    got = _read(db, tasks.get, task.id)
    assert (got.order_id, got.retry_task, got.retry_at, got.retry_args,
            got.retry_kwargs, got.retry_count, got.parked, got.park_reason,
            got.created_at) == (order_id, 'check', _at(5), '["x", 1]',
                                '{"generation": 2}', 3, False, None, _at(5))
    got = _read(db, tasks.get, bare.id)
    assert (got.retry_args, got.retry_kwargs, got.created_at) == (
        '[]', '{}', _at(1))
    assert _read(db, tasks.get, bare.id + 1000) is None


@contract
def test_a_retry_row_needs_its_order(db):
    with pytest.raises(db_exc.DBReferenceError):
        _write(db, db.repositories.retry_tasks.add, 'missing', 'check', NOW)
    assert _read(db, db.repositories.retry_tasks.list_tasks) == []


@contract
def test_due_rows_in_order_with_keyset_paging(db):
    tasks = db.repositories.retry_tasks
    a, b, c = (_order(db) for _ in range(3))
    late, first, second, future, parked = _tasks(
        db, (a, _at(2)), (b, _at(1)), (c, _at(1)), (a, _at(9)), (b, _at(0)))
    [parked_row] = [row for row in _read(db, tasks.due, _at(5), 10)
                    if row.id == parked]
    _write(db, tasks.park, parked_row, 'bad')

    rows = _read(db, tasks.due, _at(5), 10)
    assert [row.id for row in rows] == [first, second, late]
    assert all(isinstance(row, retry_tasks.DueTask) for row in rows)
    assert (rows[0].order_id, rows[0].retry_task, rows[0].retry_at,
            rows[0].retry_args, rows[0].retry_kwargs, rows[0].retry_count,
            rows[0].order_exists) == (b, 'check', _at(1), '["%s"]' % b,
                                      '{"generation": 1}', 0, True)
    assert [row.id for row in _read(db, tasks.due, _at(5), 2)] == [
        first, second]
    assert [row.id for row in _read(db, tasks.due, _at(5), 10,
                                    (_at(1), first))] == [second, late]
    assert _read(db, tasks.due, _at(5), 10, (_at(2), late)) == []
    assert [row.id for row in _read(db, tasks.due, _at(9), 10)] == [
        first, second, late, future]

    assert _read(db, tasks.any_due, _at(1))
    assert not _read(db, tasks.any_due, _at(0))  # only the parked row
    assert _read(db, tasks.count_due, _at(5)) == 3
    assert _read(db, tasks.count_due, _at(0)) == 0
    assert _read(db, tasks.next_due_after, _at(-1)) == _at(1)
    assert _read(db, tasks.next_due_after, _at(2)) == _at(9)
    assert _read(db, tasks.next_due_after, _at(9)) is None


@contract
def test_delete_as_read_skips_rows_changed_since(db):
    tasks = db.repositories.retry_tasks
    a, b, c, d = (_order(db) for _ in range(4))
    _tasks(db, (a, _at(1)), (b, _at(2)), (c, _at(3)), (d, _at(4)))
    rows = _read(db, tasks.due, _at(5), 10)

    # Meanwhile a worker replaces d's row (the highest id: SQLite hands it
    # to the next row, here c's), and an operator requeues b's.
    with db.session() as session, session.begin():
        tasks.delete_for_order(session, d)
        tasks.add(session, c, 'check', _at(8))
        assert tasks.requeue(session, rows[1].id, _at(6))

    assert _write(db, tasks.delete_as_read, rows) == {a, c}
    assert _write(db, tasks.delete_as_read, []) == set()
    assert [(t.order_id, t.retry_at) for t in _read(db, tasks.list_tasks)] \
        == [(b, _at(6)), (c, _at(8))]


@contract
def test_park_requeue_and_list_tasks(db):
    tasks = db.repositories.retry_tasks
    a, b = _order(db), _order(db)
    first, second, third = _tasks(db, (a, _at(1)), (b, _at(2)), (a, _at(3)))
    rows = _read(db, tasks.due, _at(5), 10)

    _write(db, tasks.park, rows[0], 'bad arguments')
    assert _write(db, tasks.requeue, second, _at(4))
    _write(db, tasks.park, rows[1], 'read before the requeue')

    got = _read(db, tasks.get, first)
    assert (got.parked, got.park_reason) == (True, 'bad arguments')
    assert not _read(db, tasks.get, second).parked
    assert [t.id for t in _read(db, tasks.list_tasks)] == [
        first, third, second]
    assert [t.id for t in _read(db, tasks.list_tasks, parked=True)] == [
        first]
    assert [t.id for t in _read(db, tasks.list_tasks, parked=False)] == [
        third, second]
    assert [t.id for t in _read(db, tasks.list_tasks, order_id=a)] == [
        first, third]
    assert [t.id for t in _read(db, tasks.list_tasks, parked=False,
                                order_id=a)] == [third]

    assert _write(db, tasks.requeue, first, _at(7))
    got = _read(db, tasks.get, first)
    assert (got.parked, got.park_reason, got.retry_at) == (False, None,
                                                           _at(7))
    assert not _write(db, tasks.requeue, third + 1000, _at(7))


@contract
def test_delete_retry_rows(db):
    tasks = db.repositories.retry_tasks
    a, b = _order(db), _order(db)
    first, second, third, fourth = _tasks(db, (a, _at(1)), (a, _at(2)),
                                          (b, _at(3)), (b, _at(4)))

    assert _write(db, tasks.delete, [first, fourth + 1000]) == 1
    assert _write(db, tasks.delete, []) == 0
    _write(db, tasks.delete_for_order, b)
    assert [t.id for t in _read(db, tasks.list_tasks)] == [second]


@contract
def test_locks(db):
    locks = db.repositories.locks
    lock = models.ORDER_RETRY_TASK_LOCK
    assert _read(db, locks.get, lock) is None

    _write(db, locks.insert, lock, 'r1@h', 'token-1', _at(1))
    with pytest.raises(db_exc.DBDuplicateEntry):
        _write(db, locks.insert, lock, 'r2@h', 'token-2', _at(2))
    got = _read(db, locks.get, lock)
    assert (got.entity_to_lock, got.worker_host_name, got.owner_token,
            got.created_at) == (lock, 'r1@h', 'token-1', _at(1))

    assert not _write(db, locks.renew, lock, 'token-2', _at(3))
    assert _write(db, locks.renew, lock, 'token-1', _at(4))
    assert _read(db, locks.get, lock).created_at == _at(4)
    assert not _write(db, locks.release, lock, 'token-2')
    assert _write(db, locks.release, lock, 'token-1')
    assert not _write(db, locks.release, lock, 'token-1')
    assert _read(db, locks.get, lock) is None

    assert not _write(db, locks.force_release, lock)
    _write(db, locks.insert, lock, 'r2@h', 'token-2', _at(5))
    assert _write(db, locks.force_release, lock)
    assert _read(db, locks.get, lock) is None


@contract
def test_services(db):
    services = db.repositories.services
    _write(db, services.heartbeat, 'w1@h', models.WORKER, 'h', 1, _at(0))
    _write(db, services.heartbeat, 'w1@h', 'other', 'other', 9, _at(5))
    _write(db, services.heartbeat, 'w2@h', models.WORKER, 'h', 2, _at(1))
    _write(db, services.heartbeat, 'r1@h', models.SCHEDULER, 'h', 3, _at(5))
    _write(db, services.record_pass, 'r1@h', _at(5), _at(65))
    _write(db, services.record_pass, 'gone@h', _at(5), _at(65))

    [row] = _read(db, services.list_services, models.SCHEDULER)
    assert (row.name, row.kind, row.host, row.pid, row.started_at,
            row.heartbeat_at, row.last_pass_at, row.next_pass_at) == (
        'r1@h', models.SCHEDULER, 'h', 3, _at(5), _at(5), _at(5), _at(65))
    [row, _] = _read(db, services.list_services, models.WORKER)
    assert (row.name, row.kind, row.pid, row.started_at, row.heartbeat_at,
            row.last_pass_at) == ('w1@h', models.WORKER, 1, _at(0), _at(5),
                                  None)
    assert [s.name for s in _read(db, services.list_services)] == [
        'r1@h', 'w1@h', 'w2@h']

    assert _read(db, services.live_names, _at(5)) == {'w1@h', 'r1@h'}
    assert _read(db, services.live_names, _at(1),
                 kind=models.WORKER) == {'w1@h', 'w2@h'}
    assert _read(db, services.any_dead, _at(2))
    assert not _read(db, services.any_dead, _at(1))
    assert _write(db, services.delete_dead, _at(2)) == ['w2@h']
    assert _write(db, services.delete_dead, _at(2)) == []
    _write(db, services.remove, 'r1@h')
    _write(db, services.remove, 'gone@h')
    assert [s.name for s in _read(db, services.list_services)] == ['w1@h']


@contract
def test_an_exception_in_a_transaction_writes_nothing(db):
    repos = db.repositories
    order_id = _order(db)
    _write(db, repos.locks.insert, 'held', 'r1@h', 'token-1', NOW)

    with pytest.raises(ZeroDivisionError):
        with db.session() as session, session.begin():
            repos.orders.create(session, 'certificate', {}, NOW)
            assert repos.orders.claim(session, order_id, 0, NOW, 'w1@h')
            repos.retry_tasks.add(session, order_id, 'check', NOW)
            repos.services.heartbeat(session, 'w1@h', 'worker', 'h', 1, NOW)
            assert repos.locks.release(session, 'held', 'token-1')
            1 / 0
    with pytest.raises(db_exc.DBDuplicateEntry):
        with db.session() as session, session.begin():
            repos.services.heartbeat(session, 'w1@h', 'worker', 'h', 1, NOW)
            repos.locks.insert(session, 'held', 'r2@h', 'token-2', NOW)

    with db.reader() as session, session.begin():
        assert [o.id for o in repos.orders.list_orders(session)] == [
            order_id]
        assert repos.orders.get(session, order_id).generation == 0
        assert repos.retry_tasks.list_tasks(session) == []
        assert repos.services.list_services(session) == []
        assert repos.locks.get(session, 'held').owner_token == 'token-1'


@contract
def test_begin_after_a_read_outside_a_transaction_is_refused(db):
    with db.session() as session:
        db.repositories.orders.get(session, 'missing')
        with pytest.raises(sa_exc.InvalidRequestError):
            with session.begin():
                pass
    with db.session() as session:  # one session, two transactions
        with session.begin():
            order = db.repositories.orders.create(session, 't', {}, NOW)
        with session.begin():
            assert db.repositories.orders.claim(session, order.id, 0, NOW,
                                                'w1@h')


@contract
def test_concurrent_claims_have_one_winner(db):
    order_id = _order(db)
    barrier = threading.Barrier(8)
    won = []

    def claim(owner):
        barrier.wait()
        won.append(_write(db, db.repositories.orders.claim, order_id, 0,
                          NOW, owner))

    threads = [threading.Thread(target=claim, args=('w%d@h' % i,))
               for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(won) == [False] * 7 + [True]


# What follows holds the fake to its own rules, for which a real
# database has no equivalent to compare with.

def test_fake_returns_copies():
    db = memory.InMemoryDatabase()
    order_id = _order(db, meta={'a': 1})
    order = _read(db, db.repositories.orders.get, order_id)
    order.meta['a'] = 2
    order.status = models.ERROR

    got = _read(db, db.repositories.orders.get, order_id)
    assert (got.status, got.meta) == (models.PENDING, {'a': 1})
    assert db.engine is None
    db.dispose()


def test_fake_refuses_writes_outside_a_write_transaction():
    db = memory.InMemoryDatabase()
    with pytest.raises(RuntimeError, match='reader'):
        _read(db, db.repositories.orders.create, 't', {}, NOW)
    with db.session() as session:
        with pytest.raises(RuntimeError, match='outside'):
            db.repositories.orders.create(session, 't', {}, NOW)
    with db.session() as session, session.begin():
        with pytest.raises(RuntimeError, match='wait for itself'):
            _read(db, db.repositories.orders.list_orders)
    assert _read(db, db.repositories.orders.list_orders) == []


def test_fake_fails_the_rest_of_a_transaction_after_a_database_error():
    db = memory.InMemoryDatabase()
    with db.session() as session, session.begin():
        with pytest.raises(db_exc.DBReferenceError):
            db.repositories.retry_tasks.add(session, 'missing', 'x', NOW)
        with pytest.raises(RuntimeError, match='roll it back'):
            db.repositories.orders.list_orders(session)


def test_fake_sessions_are_not_mixed():
    one, other = memory.InMemoryDatabase(), memory.InMemoryDatabase()
    with pytest.raises(TypeError):
        _read(one, other.repositories.orders.list_orders)
