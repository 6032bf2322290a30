"""Transactions on every backend; then the fake's own rules, for which a
real database has no equivalent to compare with."""

from oslo_db import exception as db_exc
import pytest
from sqlalchemy import exc as sa_exc

from tests.functional.repositories.shared import CHECK
from tests.functional.repositories.shared import claimed_order
from tests.functional.repositories.shared import contract
from tests.functional.repositories.shared import new_order
from tests.functional.repositories.shared import NOW
from tests.functional.repositories.shared import plus
from tests.functional.repositories.shared import read
from tests.functional.repositories.shared import REQUEST
from tests.functional.repositories.shared import sql_contract
from tests.functional.repositories.shared import step_of
from tests.functional.repositories.shared import write
from tests import singular
from worker.db import memory
from worker.db import models
from worker import order_types


@sql_contract
def test_an_exception_in_a_transaction_writes_nothing(db):
    repos = db.repositories
    order_id = new_order(db)
    write(db, repos.locks.insert, 'held', 'r1@h', 'token-1', NOW)

    with pytest.raises(ZeroDivisionError):
        with db.session() as session, session.begin():
            repos.orders.create(session, order_types.get('fanout'), {}, NOW)
            assert singular.claim(repos.steps, session, order_id, REQUEST, 0,
                                  NOW, 'w1@h', plus(60))
            assert repos.orders.fail(session, order_id, NOW, 'no')
            singular.add_retry(repos.retry_tasks, session, order_id, CHECK,
                               NOW)
            repos.services.heartbeat(session, 'w1@h', 'worker', 'h', 1, NOW)
            assert repos.locks.release(session, 'held', 'token-1')
            1 / 0
    with pytest.raises(db_exc.DBDuplicateEntry):
        with db.session() as session, session.begin():
            repos.services.heartbeat(session, 'w1@h', 'worker', 'h', 1, NOW)
            repos.locks.insert(session, 'held', 'r2@h', 'token-2', NOW)

    with db.reader() as session, session.begin():
        assert [o.id for o in db.queries.orders.list_orders(session)] == [
            order_id]
        assert repos.orders.get(session, order_id).status == models.PENDING
        assert repos.steps.for_order(
            session, order_id)[REQUEST].generation == 0
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
            order = db.repositories.orders.create(
                session, order_types.get('certificate'), {}, NOW)
        with session.begin():
            assert singular.claim(db.repositories.steps, session, order.id,
                                  REQUEST, 0, NOW, 'w1@h', plus(60))


@pytest.mark.parametrize('backend', ('postgresql', 'mysql'))
def test_a_write_transaction_reads_what_was_committed_since_it_began(
        database):
    # A worker writes several results in one transaction; a result read
    # after another process committed a parallel step must see it, or
    # neither result sees every step DONE. (SQLite and the fake let one
    # writer at a time: another cannot commit in between.)
    repos = database.repositories
    first, second = claimed_order(database, 'w1@h'), new_order(database)
    with database.session() as session, session.begin():
        assert singular.finish(repos.steps, session, first, REQUEST, 1, NOW,
                               models.STEP_DONE)
        assert repos.steps.for_order(session, second)[REQUEST].owner is None
        write(database, singular.on(repos.steps).claim, second, REQUEST, 0,
              NOW, 'w2@h', plus(60))
        assert repos.steps.for_order(session, second)[REQUEST].owner == \
            'w2@h'


def test_fake_returns_copies():
    db = memory.InMemoryDatabase()
    order_id = new_order(db, meta={'a': 1})
    order = read(db, db.repositories.orders.get, order_id)
    order.meta['a'] = 2
    order.status = models.ERROR
    step = step_of(db, order_id, REQUEST)
    step.generation = 5

    got = read(db, db.repositories.orders.get, order_id)
    assert (got.status, got.meta) == (models.PENDING, {'a': 1})
    assert step_of(db, order_id, REQUEST).generation == 0
    assert db.engine is None
    db.dispose()


def test_fake_refuses_writes_outside_a_write_transaction():
    db = memory.InMemoryDatabase()
    certificate = order_types.get('certificate')
    with pytest.raises(RuntimeError, match='reader'):
        read(db, db.repositories.orders.create, certificate, {}, NOW)
    with db.session() as session:
        with pytest.raises(RuntimeError, match='outside'):
            db.repositories.orders.create(session, certificate, {}, NOW)
    with db.session() as session, session.begin():
        with pytest.raises(RuntimeError, match='wait for itself'):
            read(db, db.repositories.orders.count_unfinished_by_status)
    assert read(db, db.repositories.orders.count_unfinished_by_status) == {}


def test_fake_fails_the_rest_of_a_transaction_after_a_database_error():
    db = memory.InMemoryDatabase()
    with db.session() as session, session.begin():
        with pytest.raises(db_exc.DBReferenceError):
            singular.add_retry(db.repositories.retry_tasks, session, 'missing',
                               'x', NOW)
        with pytest.raises(RuntimeError, match='roll it back'):
            db.repositories.steps.for_order(session, 'missing')


def test_fake_sessions_are_not_mixed():
    one, other = memory.InMemoryDatabase(), memory.InMemoryDatabase()
    with pytest.raises(TypeError):
        read(one, other.repositories.orders.count_unfinished_by_status)
    with pytest.raises(TypeError):
        read(one, other.repositories.steps.for_order, 'missing')
