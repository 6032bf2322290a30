"""The in-memory repositories behave as the SQL ones, on every backend.

Each contract test runs against ``worker.db.memory.InMemoryDatabase`` and
against a migrated database on SQLite, PostgreSQL and MariaDB, through
``db.repositories`` and ``db.session()``/``db.reader()`` only: the fake
cannot drift from what it stands in for. The memory variants need no
server (``-k memory``).
"""

import datetime
import inspect
import json
import threading

from oslo_db import exception as db_exc
import pytest
from sqlalchemy import exc as sa_exc

from tests.functional import databases
from worker.db import memory
from worker.db import models
from worker.db import repositories
from worker.db import retry_tasks
from worker.db import steps
from worker import order_types

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)
# The certificate type: REQUEST first, then CHECK.
REQUEST = 'process_type_order'
CHECK = 'check_certificate_status'
# The fanout type's three parallel first steps, and the step after them.
ROOTS = ('check_caa', 'check_domains', 'check_key')
JOIN = 'issue'

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


def _order(db, at=NOW, meta=None, type_name='certificate'):
    return _write(db, db.repositories.orders.create,
                  order_types.get(type_name), meta or {}, at).id


def _step(db, order_id, name):
    return _read(db, db.repositories.steps.for_order, order_id)[name]


def _claimed(db, owner, at=NOW, lease_until=None, name=REQUEST,
             type_name='certificate'):
    """An order whose step ``name`` ``owner`` claimed at ``at``
    (generation 1)."""
    order_id = _order(db, at, type_name=type_name)
    assert _write(db, db.repositories.steps.claim, order_id, name, 0, at,
                  owner, lease_until or _at(3600))
    return order_id


def _public_functions(module):
    return {name: function for name, function in vars(module).items()
            if inspect.isfunction(function) and not name.startswith('_') and
            function.__module__ == module.__name__}


@pytest.mark.parametrize('aggregate', ('locks', 'orders', 'steps',
                                       'retry_tasks', 'services',
                                       'notifications'))
def test_fake_has_every_sql_function_with_its_signature(aggregate):
    sql = _public_functions(getattr(repositories.SQL, aggregate))
    fake = getattr(memory.InMemoryDatabase().repositories, aggregate)
    public = {name for name in dir(fake) if not name.startswith('_')}

    assert public == set(sql)
    for name, function in sql.items():
        assert (inspect.signature(getattr(fake, name)) ==
                inspect.signature(function)), name


# Orders.

@contract
def test_create_get_and_list_orders(db):
    repos = db.repositories
    first = _write(db, repos.orders.create, order_types.get('certificate'),
                   {'pair': (1, 2)}, _at(1))
    second = _order(db, at=_at(0), type_name='fanout')
    third = _order(db, at=_at(2))
    _write(db, repos.orders.fail, third, _at(3), 'no')

    assert (first.type, first.status, first.error_reason, first.created_at,
            first.updated_at) == ('certificate', models.PENDING, None,
                                  _at(1), _at(1))
    with db.session() as session:  # a read without begin()
        order = repos.orders.get(session, first.id)
        assert repos.orders.get(session, 'missing') is None
    assert order.meta == {'pair': [1, 2]}  # as JSON gives it back
    assert (order.type, order.error_reason, order.updated_at) == (
        'certificate', None, _at(1))
    assert [o.id for o in _read(db, repos.orders.list_orders)] == [
        second, first.id, third]
    assert [o.id for o in _read(db, repos.orders.list_orders,
                                status=models.PENDING, limit=1)] == [second]
    assert _read(db, repos.orders.count_by_status) == {models.PENDING: 2,
                                                       models.ERROR: 1}
    assert _read(db, repos.orders.count_unfinished_by_type) == {
        'certificate': 1, 'fanout': 1}
    assert _read(db, repos.orders.count_unfinished_by_status) == {
        models.PENDING: 2}


@contract
def test_create_makes_the_first_steps_pending_and_dispatched(db):
    certificate = _order(db, at=_at(1))
    fanout = _order(db, at=_at(2), type_name='fanout')

    found = _read(db, db.repositories.steps.for_orders,
                  [fanout, certificate, 'missing'])
    assert list(found) == [fanout, certificate, 'missing']
    assert found['missing'] == {}
    # Listed by name, whatever the declaration.
    assert list(found[certificate]) == [CHECK, REQUEST]
    assert list(found[fanout]) == sorted(found[fanout])
    request = found[certificate][REQUEST]
    assert (request.order_id, request.name, request.status,
            request.generation, request.attempt, request.failures,
            request.polls, request.owner, request.claimed_at,
            request.lease_expires_at, request.dispatched_at,
            request.started_at, request.finished_at, request.last_error,
            request.output, request.updated_at) == (
        certificate, REQUEST, models.STEP_PENDING, 0, 0, 0, 0, None, None,
        None, _at(1), None, None, None, None, _at(1))
    check = found[certificate][CHECK]
    assert (check.status, check.dispatched_at) == (models.STEP_WAITING,
                                                   None)
    assert {name: step.status for name, step in found[fanout].items()
            if step.status == models.STEP_PENDING} == {
        name: models.STEP_PENDING for name in ROOTS}
    assert {step.dispatched_at for step in found[fanout].values()} == {
        _at(2), None}
    assert _read(db, db.repositories.steps.for_orders, []) == {}


@contract
def test_order_status_moves_start_from_their_status(db):
    orders = db.repositories.orders
    done, failed, locked = (_order(db, meta={'a': 1, 'b': 2})
                            for _ in range(3))

    assert _write(db, orders.lock_live, locked, _at(1))
    assert not _write(db, orders.lock_live, 'missing', _at(1))
    assert _read(db, orders.get, locked).updated_at == _at(1)

    # The caller merges: the metadata given is the order's.
    assert _write(db, orders.complete, done, _at(2),
                  {'a': 1, 'b': 9, 'c': [3]})
    order = _read(db, orders.get, done)
    assert (order.status, order.meta, order.updated_at) == (
        models.ACTIVE, {'a': 1, 'b': 9, 'c': [3]}, _at(2))
    assert _write(db, orders.fail, failed, _at(2), 'broken')
    order = _read(db, orders.get, failed)
    assert (order.status, order.error_reason) == (models.ERROR, 'broken')

    # A finished order takes no further move.
    for order_id in (done, failed):
        assert not _write(db, orders.complete, order_id, _at(3), {})
        assert not _write(db, orders.fail, order_id, _at(3), 'late')
        assert not _write(db, orders.cancel, order_id, _at(3), 'late',
                          False)
        assert not _write(db, orders.end_cancel, order_id, _at(3))
        assert not _write(db, orders.lock_live, order_id, _at(3))
    assert not _write(db, orders.complete, 'missing', _at(3), {})
    assert not _write(db, orders.fail, 'missing', _at(3), 'late')
    assert _read(db, orders.get, done).status == models.ACTIVE
    assert _read(db, orders.get, failed).updated_at == _at(2)


@contract
def test_cancel_and_end_cancel(db):
    orders = db.repositories.orders
    at_once, compensated, failing = (_order(db) for _ in range(3))

    assert _write(db, orders.cancel, at_once, _at(1), 'operator', False)
    assert not _write(db, orders.cancel, at_once, _at(2), 'again', False)
    assert not _write(db, orders.cancel, 'missing', _at(2), 'again', True)
    order = _read(db, orders.get, at_once)
    assert (order.status, order.error_reason, order.updated_at) == (
        models.CANCELLED, 'operator', _at(1))
    assert not _write(db, orders.end_cancel, at_once, _at(2))

    assert _write(db, orders.cancel, compensated, _at(1), 'operator', True)
    assert _read(db, orders.get, compensated).status == models.CANCELLING
    # Live until its compensation ends, but not for the workflow.
    assert _write(db, orders.lock_live, compensated, _at(2))
    assert not _write(db, orders.complete, compensated, _at(2), {})
    assert not _write(db, orders.fail, compensated, _at(2), 'no')
    assert _write(db, orders.end_cancel, compensated, _at(3))
    order = _read(db, orders.get, compensated)
    assert (order.status, order.error_reason, order.updated_at) == (
        models.CANCELLED, 'operator', _at(3))

    assert _write(db, orders.cancel, failing, _at(1), 'operator', True)
    assert _write(db, orders.end_cancel, failing, _at(2),
                  failure='compensation revoke failed')
    assert not _write(db, orders.end_cancel, failing, _at(3), failure='x')
    order = _read(db, orders.get, failing)
    assert (order.status, order.error_reason) == (
        models.CANCELLED, 'operator; compensation revoke failed')
    assert _read(db, orders.count_unfinished_by_type) == {}


# Steps.

@contract
def test_with_steps_reads_an_order_and_its_steps_at_once(db):
    order_id = _claimed(db, 'w-1')
    other = _order(db)
    order, steps = _read(db, db.repositories.orders.with_steps, order_id)
    assert order.id == order_id and order.type == 'certificate'
    assert sorted(steps) == sorted(order_types.get('certificate').names)
    assert all(step.order_id == order_id for step in steps.values())
    assert (steps[REQUEST].generation, steps[REQUEST].owner) == (1, 'w-1')
    assert _read(db, db.repositories.orders.with_steps, 'missing') == \
        (None, {})
    assert _read(db, db.repositories.orders.with_steps, other)[0].id == \
        other


@contract
def test_with_steps_many_reads_orders_and_their_steps_at_once(db):
    claimed = _claimed(db, 'w-1')
    fanout = _order(db, type_name='fanout')
    repos = db.repositories

    found = _read(db, repos.orders.with_steps_many,
                  {claimed, fanout, 'missing'})

    assert set(found) == {claimed, fanout}
    order, steps = found[fanout]
    assert (order.id, order.type) == (fanout, 'fanout')
    assert sorted(steps) == sorted(order_types.get('fanout').names)
    assert found[claimed][1][REQUEST].owner == 'w-1'
    assert _read(db, repos.orders.with_steps_many, []) == {}


@contract
def test_claim_and_results_are_fenced_by_generation(db):
    steps_repo = db.repositories.steps
    order_id = _order(db)

    assert _write(db, steps_repo.claim, order_id, REQUEST, 0, _at(1),
                  'w1@h', _at(61))
    assert not _write(db, steps_repo.claim, order_id, REQUEST, 0, _at(1),
                      'w2@h', _at(61))
    assert not _write(db, steps_repo.claim, order_id, CHECK, 0, _at(1),
                      'w2@h', _at(61))       # WAITING
    assert not _write(db, steps_repo.claim, 'missing', REQUEST, 0, _at(1),
                      'w2@h', _at(61))
    step = _step(db, order_id, REQUEST)
    assert (step.generation, step.attempt, step.owner, step.claimed_at,
            step.lease_expires_at, step.dispatched_at, step.started_at,
            step.updated_at) == (1, 1, 'w1@h', _at(1), _at(61), None,
                                 _at(1), _at(1))

    assert not _write(db, steps_repo.retry, order_id, REQUEST, 0, _at(2),
                      1, 0, 'down')
    assert _write(db, steps_repo.retry, order_id, REQUEST, 1, _at(2),
                  failures=1, polls=2, last_error='down')
    step = _step(db, order_id, REQUEST)
    assert (step.status, step.generation, step.failures, step.polls,
            step.last_error, step.owner, step.claimed_at,
            step.lease_expires_at, step.updated_at) == (
        models.STEP_PENDING, 1, 1, 2, 'down', None, None, None, _at(2))

    # The second run keeps when the first started.
    assert _write(db, steps_repo.claim, order_id, REQUEST, 1, _at(3),
                  'w2@h', _at(63))
    step = _step(db, order_id, REQUEST)
    assert (step.generation, step.attempt, step.started_at) == (2, 2,
                                                                _at(1))
    # A poll clears the last error.
    assert _write(db, steps_repo.retry, order_id, REQUEST, 2, _at(4), 0, 3)
    assert _step(db, order_id, REQUEST).last_error is None
    assert _write(db, steps_repo.claim, order_id, REQUEST, 2, _at(5),
                  'w2@h', _at(65))

    assert not _write(db, steps_repo.finish, order_id, REQUEST, 2, _at(6),
                      models.STEP_DONE, output={'x': 1})
    assert _write(db, steps_repo.finish, order_id, REQUEST, 3, _at(6),
                  models.STEP_DONE, output={'pair': (1, 2)})
    step = _step(db, order_id, REQUEST)
    assert (step.status, step.generation, step.output, step.finished_at,
            step.owner, step.lease_expires_at, step.last_error) == (
        models.STEP_DONE, 3, {'pair': [1, 2]}, _at(6), None, None, None)

    # A finished step takes no further write, even with its own token.
    assert not _write(db, steps_repo.claim, order_id, REQUEST, 3, _at(7),
                      'w1@h', _at(67))
    assert not _write(db, steps_repo.retry, order_id, REQUEST, 3, _at(7),
                      1, 0)
    assert not _write(db, steps_repo.finish, order_id, REQUEST, 3, _at(7),
                      models.STEP_FAILED, last_error='late')
    assert not _write(db, steps_repo.take_back, order_id, REQUEST, 3,
                      _at(7))
    assert _step(db, order_id, REQUEST).status == models.STEP_DONE


@contract
def test_finish_failed_keeps_the_output_it_had(db):
    steps_repo = db.repositories.steps
    order_id = _claimed(db, 'w1@h')

    assert _write(db, steps_repo.finish, order_id, REQUEST, 1, _at(1),
                  models.STEP_FAILED, last_error='refused')
    step = _step(db, order_id, REQUEST)
    assert (step.status, step.last_error, step.output, step.finished_at,
            step.owner) == (models.STEP_FAILED, 'refused', None, _at(1),
                            None)


@contract
def test_start_makes_waiting_steps_pending(db):
    steps_repo = db.repositories.steps
    cast, delayed = _order(db, type_name='fanout'), _order(db)

    _write(db, steps_repo.start, cast, [JOIN, ROOTS[0], 'missing'], _at(5),
           True)
    _write(db, steps_repo.start, delayed, (CHECK,), _at(5), False)
    _write(db, steps_repo.start, delayed, [], _at(6), True)

    found = _read(db, steps_repo.for_order, cast)
    assert (found[JOIN].status, found[JOIN].dispatched_at,
            found[JOIN].updated_at) == (models.STEP_PENDING, _at(5), _at(5))
    # Only WAITING steps start: a PENDING one keeps its dispatch.
    assert (found[ROOTS[0]].dispatched_at, found[ROOTS[0]].updated_at) == (
        NOW, NOW)
    assert found['poll'].status == models.STEP_WAITING
    check = _step(db, delayed, CHECK)
    assert (check.status, check.dispatched_at) == (models.STEP_PENDING,
                                                   None)


def _fanout_running_and_done(db):
    """A fanout order whose first root runs on ``w1@h`` and whose second
    root is DONE (at generation 1)."""
    steps_repo = db.repositories.steps
    order_id = _claimed(db, 'w1@h', name=ROOTS[0], type_name='fanout')
    assert _write(db, steps_repo.claim, order_id, ROOTS[1], 0, NOW, 'w1@h',
                  _at(60))
    assert _write(db, steps_repo.finish, order_id, ROOTS[1], 1, _at(1),
                  models.STEP_DONE, output={})
    return order_id


@contract
def test_revoke_open_cancels_waiting_and_pending_steps(db):
    steps_repo = db.repositories.steps
    order_id = _fanout_running_and_done(db)

    revoked = _write(db, steps_repo.revoke_open, order_id, _at(2), 'gone')

    assert sorted(revoked) == ['check_caa', 'check_key', 'issue', 'notify',
                               'poll', 'store']
    found = _read(db, steps_repo.for_order, order_id)
    claimed = found[ROOTS[0]]
    assert (claimed.status, claimed.generation, claimed.owner,
            claimed.lease_expires_at, claimed.last_error,
            claimed.finished_at, claimed.updated_at) == (
        models.STEP_CANCELLED, 2, None, None, 'gone', _at(2), _at(2))
    assert (found[ROOTS[2]].generation, found[ROOTS[2]].dispatched_at) == (
        1, None)
    assert (found[JOIN].status, found[JOIN].generation) == (
        models.STEP_CANCELLED, 1)
    assert (found[ROOTS[1]].status, found[ROOTS[1]].generation) == (
        models.STEP_DONE, 1)
    # The run still going on the old token has no effect.
    assert not _write(db, steps_repo.finish, order_id, ROOTS[0], 1, _at(3),
                      models.STEP_DONE, output={})
    assert _write(db, steps_repo.revoke_open, order_id, _at(3), 'x') == []
    assert _write(db, steps_repo.revoke_open, 'missing', _at(3), 'x') == []


@contract
def test_add_inserts_one_dispatched_step(db):
    steps_repo = db.repositories.steps
    order_id = _order(db, type_name='fanout')

    _write(db, steps_repo.add, order_id, 'revoke', _at(4))

    step = _step(db, order_id, 'revoke')
    assert (step.status, step.generation, step.dispatched_at,
            step.updated_at) == (models.STEP_PENDING, 0, _at(4), _at(4))
    with pytest.raises(db_exc.DBDuplicateEntry):
        _write(db, steps_repo.add, order_id, 'revoke', _at(5))
    with pytest.raises(db_exc.DBReferenceError):
        _write(db, steps_repo.add, 'missing', 'revoke', _at(5))
    with pytest.raises(db_exc.DBReferenceError):
        _write(db, steps_repo.create, 'missing', ['a', 'b'], {'a'}, _at(5))
    assert _step(db, order_id, 'revoke').dispatched_at == _at(4)


@contract
def test_create_steps_of_an_order(db):
    steps_repo = db.repositories.steps
    order_id = _order(db)

    _write(db, steps_repo.create, order_id, ['b', 'a'], {'a'}, _at(1))

    found = _read(db, steps_repo.for_order, order_id)
    assert list(found) == ['a', 'b', CHECK, REQUEST]
    assert (found['a'].status, found['a'].dispatched_at) == (
        models.STEP_PENDING, _at(1))
    assert (found['b'].status, found['b'].dispatched_at) == (
        models.STEP_WAITING, None)


@contract
def test_mark_dispatched_leaves_claimed_and_finished_steps_alone(db):
    steps_repo = db.repositories.steps
    order_id = _fanout_running_and_done(db)

    _write(db, steps_repo.mark_dispatched,
           {(order_id, name) for name in ROOTS + (JOIN, 'missing')}, _at(5))
    _write(db, steps_repo.mark_dispatched, [], _at(6))

    found = _read(db, steps_repo.for_order, order_id)
    assert found[ROOTS[2]].dispatched_at == _at(5)
    assert found[ROOTS[0]].dispatched_at is None     # claimed
    assert found[ROOTS[1]].dispatched_at is None     # finished
    assert found[JOIN].dispatched_at is None         # WAITING
    # Not a change of the step: the cast is a fact about the dispatch.
    assert found[ROOTS[2]].updated_at == NOW


@contract
def test_mark_dispatched_marks_only_the_steps_named(db):
    """Each order's own step, not the steps of that name in the other
    orders of the batch."""
    steps_repo = db.repositories.steps
    first, second = (_order(db, type_name='fanout') for _ in range(2))

    _write(db, steps_repo.mark_dispatched,
           [(first, ROOTS[0]), (second, ROOTS[1]), (second, ROOTS[2])],
           _at(5))

    marked = {(order_id, name)
              for order_id in (first, second)
              for name, step in _read(db, steps_repo.for_order,
                                      order_id).items()
              if step.dispatched_at == _at(5)}
    assert marked == {(first, ROOTS[0]), (second, ROOTS[1]),
                      (second, ROOTS[2])}


def _rows(rows):
    return [(row.order_id, row.name, row.generation, row.failures,
             row.owner) for row in rows]


@contract
def test_lost_dispatches_exclude_steps_with_a_retry_row(db):
    repos = db.repositories
    # Cast latest first: neither insertion nor key order is the answer.
    lost = [_order(db, at=_at(seconds)) for seconds in (5, 4, 3, 2, 1)]
    _claimed(db, 'w1@h', at=_at(0))
    waiting = _order(db, at=_at(0))
    _write(db, repos.retry_tasks.add, waiting, REQUEST, _at(9))
    # A row of another step of the order does not hide this one.
    other_step = _order(db, at=_at(0.5))
    _write(db, repos.retry_tasks.add, other_step, CHECK, _at(9))
    _order(db, at=_at(10))  # cast at the cutoff

    rows = _read(db, repos.steps.lost_dispatches, _at(10), 10)
    assert all(isinstance(row, steps.RecoveryRow) for row in rows)
    assert _rows(rows) == [(other_step, REQUEST, 0, 0, None)] + [
        (order_id, REQUEST, 0, 0, None) for order_id in reversed(lost)]
    assert [row.order_id for row in _read(
        db, repos.steps.lost_dispatches, _at(10), 2)] == [other_step,
                                                          lost[-1]]
    assert _read(db, repos.steps.lost_dispatches, _at(0.5), 10) == []


@contract
def test_owners_and_owned_by(db):
    repos = db.repositories
    first, second = _claimed(db, 'w1@h'), _claimed(db, 'w2@h')
    retried = _claimed(db, 'w1@h')
    _write(db, repos.retry_tasks.add, retried, REQUEST, NOW)
    _order(db)

    assert _read(db, repos.steps.owners) == {'w1@h', 'w2@h'}
    rows = _read(db, repos.steps.owned_by, ['w1@h', 'dead@h'], 10)
    assert _rows(rows) == [(first, REQUEST, 1, 0, 'w1@h')]
    assert {row.order_id for row in _read(db, repos.steps.owned_by,
                                          {'w1@h', 'w2@h'}, 10)} == {
        first, second}
    assert len(_read(db, repos.steps.owned_by, ['w1@h', 'w2@h'], 1)) == 1
    assert _read(db, repos.steps.owned_by, [], 10) == []


@contract
def test_expired_leases(db):
    repos = db.repositories
    late = _claimed(db, 'w1@h', lease_until=_at(30))
    later = _claimed(db, 'w2@h', lease_until=_at(20))
    _claimed(db, 'w1@h', lease_until=_at(40))       # at the cutoff
    done = _claimed(db, 'w1@h', lease_until=_at(10))
    _write(db, repos.steps.finish, done, REQUEST, 1, _at(5),
           models.STEP_DONE, output={})
    retried = _claimed(db, 'w1@h', lease_until=_at(10))
    _write(db, repos.steps.retry, retried, REQUEST, 1, _at(5), 1, 0)

    rows = _read(db, repos.steps.expired_leases, _at(40), 10)
    assert _rows(rows) == [(later, REQUEST, 1, 0, 'w2@h'),
                           (late, REQUEST, 1, 0, 'w1@h')]
    assert _rows(_read(db, repos.steps.expired_leases, _at(40), 1)) == [
        (later, REQUEST, 1, 0, 'w2@h')]
    assert _read(db, repos.steps.expired_leases, _at(20), 10) == []


@contract
def test_take_back(db):
    steps_repo = db.repositories.steps
    dead, expired = _claimed(db, 'w1@h'), _claimed(db, 'w1@h')
    assert _write(db, steps_repo.retry, expired, REQUEST, 1, NOW, 2, 0,
                  'down')
    assert _write(db, steps_repo.claim, expired, REQUEST, 1, _at(1), 'w2@h',
                  _at(2))

    assert not _write(db, steps_repo.take_back, dead, REQUEST, 0, _at(5))
    assert not _write(db, steps_repo.take_back, dead, CHECK, 0, _at(5))
    assert _write(db, steps_repo.take_back, dead, REQUEST, 1, _at(5))
    step = _step(db, dead, REQUEST)
    assert (step.status, step.generation, step.owner, step.claimed_at,
            step.lease_expires_at, step.dispatched_at, step.failures,
            step.last_error, step.updated_at) == (
        models.STEP_PENDING, 2, None, None, None, None, 0, None, _at(5))

    assert _write(db, steps_repo.take_back, expired, REQUEST, 2, _at(5),
                  failed='its lease ended on w2@h')
    step = _step(db, expired, REQUEST)
    assert (step.generation, step.owner, step.failures, step.last_error,
            step.attempt) == (3, None, 3, 'its lease ended on w2@h', 2)
    # The owner's late result has no effect.
    assert not _write(db, steps_repo.finish, expired, REQUEST, 2, _at(6),
                      models.STEP_DONE, output={})


@contract
def test_concurrent_claims_have_one_winner(db):
    order_id = _order(db)
    barrier = threading.Barrier(8)
    won = []

    def claim(owner):
        barrier.wait()
        won.append(_write(db, db.repositories.steps.claim, order_id,
                          REQUEST, 0, NOW, owner, _at(60)))

    threads = [threading.Thread(target=claim, args=('w%d@h' % i,))
               for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(won) == [False] * 7 + [True]
    step = _step(db, order_id, REQUEST)
    assert (step.generation, step.attempt) == (1, 1)


@contract
def test_claim_many_claims_the_steps_still_at_their_generation(db):
    steps_repo = db.repositories.steps
    fresh, later, by_other, by_me_before = (_order(db) for _ in range(4))
    assert _write(db, steps_repo.claim, by_other, REQUEST, 0, NOW,
                  'other@h', _at(60))
    # Claimed by this owner before: same owner and generation, but not
    # this claim (told apart by its time).
    assert _write(db, steps_repo.claim, by_me_before, REQUEST, 0, _at(-1),
                  'me@h', _at(60))

    claimed = _write(db, steps_repo.claim_many, [
        (fresh, REQUEST, 0, _at(60)), (by_other, REQUEST, 0, _at(60)),
        (later, REQUEST, 0, _at(90)), (by_me_before, REQUEST, 0, _at(60))],
        NOW, 'me@h')

    assert claimed == {(fresh, REQUEST), (later, REQUEST)}
    for order_id, lease in ((fresh, _at(60)), (later, _at(90))):
        step = _step(db, order_id, REQUEST)
        assert (step.generation, step.owner, step.claimed_at,
                step.lease_expires_at, step.attempt, step.started_at,
                step.dispatched_at) == (1, 'me@h', NOW, lease, 1, NOW, None)
    assert _step(db, by_other, REQUEST).owner == 'other@h'
    assert _step(db, by_me_before, REQUEST).claimed_at == _at(-1)
    # Every step claimed: no read needed, the same answer.
    assert _write(db, steps_repo.claim_many,
                  [(fresh, CHECK, 0, _at(60))], NOW, 'me@h') == set()
    assert _write(db, steps_repo.claim_many, [], NOW, 'me@h') == set()


@contract
def test_claim_many_claims_each_order_s_own_steps_only(db):
    """Several names and generations in one batch: a step is claimed only
    as asked for its own order, at its own generation."""
    steps_repo = db.repositories.steps
    first, second = (_order(db, type_name='fanout') for _ in range(2))

    claimed = _write(db, steps_repo.claim_many, [
        (first, ROOTS[0], 0, _at(60)), (first, ROOTS[1], 0, _at(60)),
        (second, ROOTS[0], 5, _at(60)), (second, ROOTS[2], 0, _at(60))],
        NOW, 'me@h')

    assert claimed == {(first, ROOTS[0]), (first, ROOTS[1]),
                       (second, ROOTS[2])}
    owned = {(order_id, name)
             for order_id in (first, second)
             for name, step in _read(db, steps_repo.for_order,
                                     order_id).items()
             if step.owner == 'me@h'}
    assert owned == claimed


@contract
def test_steps_of_many_orders_end_retry_and_start_each_fenced(db):
    """The ``*_many`` writes of a batch of results: each step as the
    single write would leave it, and a stale token counted out."""
    steps_repo = db.repositories.steps
    done, failed, retried, stale = (_claimed(db, 'w1@h') for _ in range(4))

    assert _write(db, steps_repo.finish_many, [
        (done, REQUEST, 1, models.STEP_DONE, {'x': 1}, None),
        (failed, REQUEST, 1, models.STEP_FAILED, None, 'refused'),
        (stale, REQUEST, 5, models.STEP_DONE, {'x': 2}, None)],
        _at(1)) == 2
    assert _write(db, steps_repo.retry_many, [
        (retried, REQUEST, 1, 2, 3, 'later'),
        (stale, REQUEST, 0, 1, 0, None)], _at(2)) == 1
    _write(db, steps_repo.start_many, [(done, [CHECK], True),
                                       (failed, (CHECK,), False)], _at(3))

    found = {order_id: _read(db, steps_repo.for_order, order_id)
             for order_id in (done, failed, retried, stale)}
    assert [(step.status, step.output, step.last_error, step.finished_at,
             step.owner) for step in (found[done][REQUEST],
                                      found[failed][REQUEST])] == [
        (models.STEP_DONE, {'x': 1}, None, _at(1), None),
        (models.STEP_FAILED, None, 'refused', _at(1), None)]
    step = found[retried][REQUEST]
    assert (step.status, step.failures, step.polls, step.last_error,
            step.owner, step.updated_at) == (
        models.STEP_PENDING, 2, 3, 'later', None, _at(2))
    step = found[stale][REQUEST]
    assert (step.status, step.owner, step.failures, step.updated_at) == (
        models.STEP_PENDING, 'w1@h', 0, NOW)
    assert [(found[order_id][CHECK].status,
             found[order_id][CHECK].dispatched_at)
            for order_id in (done, failed, stale)] == [
        (models.STEP_PENDING, _at(3)), (models.STEP_PENDING, None),
        (models.STEP_WAITING, None)]
    assert _write(db, steps_repo.finish_many, [], _at(4)) == 0
    assert _write(db, steps_repo.retry_many, [], _at(4)) == 0


@contract
def test_many_orders_complete_at_once_each_with_its_metadata(db):
    orders = db.repositories.orders
    first, second, failed = (_order(db, meta={'a': 1}) for _ in range(3))
    assert _write(db, orders.fail, failed, _at(1), 'broken')

    assert _write(db, orders.complete_many, [
        (first, {'a': 1, 'n': 1}), (second, {'a': 1, 'n': 2}),
        (failed, {'n': 3})], _at(2)) == 2

    assert [(order.status, order.meta, order.updated_at) for order in (
        _read(db, orders.get, order_id) for order_id in (first, second,
                                                         failed))] == [
        (models.ACTIVE, {'a': 1, 'n': 1}, _at(2)),
        (models.ACTIVE, {'a': 1, 'n': 2}, _at(2)),
        (models.ERROR, {'a': 1}, _at(1))]
    assert _write(db, orders.complete_many, [], _at(3)) == 0


@contract
def test_retry_rows_of_many_steps_are_added_and_deleted_at_once(db):
    tasks = db.repositories.retry_tasks
    first, second = _order(db), _order(db)
    kept = _tasks(db, (second, _at(1)))

    _write(db, tasks.delete_for_steps, [(first, CHECK), (second, REQUEST)])
    _write(db, tasks.add_many, [
        dict(order_id=first, retry_task=CHECK, retry_at=_at(5),
             args=[first], kwargs={'generation': 1}, retry_count=2,
             now=NOW, priority=3),
        dict(order_id=second, retry_task=REQUEST, retry_at=_at(6))])
    _write(db, tasks.delete_for_steps, [])
    _write(db, tasks.add_many, [])

    due = _read(db, tasks.due, _at(10), 10)
    assert [(row.order_id, row.retry_task, row.retry_at, row.retry_args,
             row.retry_kwargs, row.retry_count, row.priority)
            for row in due] == [
        (first, CHECK, _at(5), json.dumps([first]),
         json.dumps({'generation': 1}), 2, 3),
        (second, CHECK, _at(1), json.dumps([second]),
         json.dumps({'generation': 1}), 0, 0),
        (second, REQUEST, _at(6), '[]', '{}', 0, 0)]
    assert kept[0] in [row.id for row in due]

    _write(db, tasks.delete_for_steps, [(first, CHECK), (second, REQUEST)])
    assert [row.id for row in _read(db, tasks.due, _at(10), 10)] == kept
    with pytest.raises(ValueError):
        _write(db, tasks.add_many, [dict(order_id=first, retry_task=CHECK,
                                         retry_at=NOW, priority=99)])


@contract
def test_concurrent_batch_claims_have_one_winner_per_step(db):
    order_ids = [_order(db) for _ in range(3)]
    barrier = threading.Barrier(6)
    won = []

    def claim(owner):
        barrier.wait()
        won.extend(_write(db, db.repositories.steps.claim_many, [
            (order_id, REQUEST, 0, _at(60)) for order_id in order_ids],
            NOW, owner))

    threads = [threading.Thread(target=claim, args=('w%d@h' % i,))
               for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(won) == sorted((order_id, REQUEST)
                                 for order_id in order_ids)
    assert {_step(db, order_id, REQUEST).generation
            for order_id in order_ids} == {1}


# Retry rows.

def _tasks(db, *specs):
    """Add one retry row per (order_id, retry_at); returns their ids."""
    with db.session() as session, session.begin():
        return [db.repositories.retry_tasks.add(
            session, order_id, CHECK, retry_at, args=[order_id],
            kwargs={'generation': 1}) for order_id, retry_at in specs]


@contract
def test_add_and_get_retry_rows(db):
    tasks = db.repositories.retry_tasks
    order_id = _order(db)
    task = _write(db, tasks.add, order_id, CHECK, _at(5), args=('x', 1),
                  kwargs={'generation': 2}, retry_count=3, priority=7)
    bare = _write(db, tasks.add, order_id, CHECK, _at(6), now=_at(1))

    assert bare > task
    got = _read(db, tasks.get, task)
    assert (got.order_id, got.retry_task, got.retry_at, got.retry_args,
            got.retry_kwargs, got.retry_count, got.priority, got.parked,
            got.park_reason, got.created_at) == (
        order_id, CHECK, _at(5), '["x", 1]', '{"generation": 2}', 3, 7,
        False, None, _at(5))
    got = _read(db, tasks.get, bare)
    assert (got.retry_args, got.retry_kwargs, got.priority,
            got.created_at) == ('[]', '{}', 0, _at(1))
    assert _read(db, tasks.get, bare + 1000) is None


@contract
def test_a_retry_row_needs_its_order(db):
    with pytest.raises(db_exc.DBReferenceError):
        _write(db, db.repositories.retry_tasks.add, 'missing', CHECK, NOW)
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
            rows[0].priority, rows[0].step_exists) == (
        b, CHECK, _at(1), '["%s"]' % b, '{"generation": 1}', 0, 0, True)
    assert [row.id for row in _read(db, tasks.due, _at(5), 2)] == [
        first, second]
    assert rows[0].key == (0, _at(1), first)
    assert [row.id for row in _read(db, tasks.due, _at(5), 10,
                                    rows[0].key)] == [second, late]
    assert _read(db, tasks.due, _at(5), 10, rows[2].key) == []
    assert [row.id for row in _read(db, tasks.due, _at(9), 10)] == [
        first, second, late, future]

    assert _read(db, tasks.any_due, _at(1))
    assert not _read(db, tasks.any_due, _at(0))  # only the parked row
    assert _read(db, tasks.count_due, _at(5)) == 3
    assert _read(db, tasks.count_due, _at(0)) == 0
    assert _read(db, tasks.count_later, _at(5)) == 1      # future
    assert _read(db, tasks.count_later, _at(0)) == 4
    assert _read(db, tasks.count_parked) == 1
    assert _read(db, tasks.next_due_after, _at(-1)) == _at(1)
    assert _read(db, tasks.next_due_after, _at(2)) == _at(9)
    assert _read(db, tasks.next_due_after, _at(9)) is None


@contract
def test_a_due_row_tells_whether_its_order_has_its_step(db):
    tasks = db.repositories.retry_tasks
    order_id = _order(db)
    with db.session() as session, session.begin():
        for name, at in ((REQUEST, 1), ('format_hard_disk', 2),
                         ('check_domains', 3)):
            tasks.add(session, order_id, name, _at(at))

    assert [(row.retry_task, row.step_exists)
            for row in _read(db, tasks.due, _at(5), 10)] == [
        (REQUEST, True), ('format_hard_disk', False),
        ('check_domains', False)]


@contract
def test_delete_as_read_deletes_by_id_and_ids_are_never_reused(db):
    tasks = db.repositories.retry_tasks
    a, b, c, d = (_order(db) for _ in range(4))
    ids = _tasks(db, (a, _at(1)), (b, _at(2)), (c, _at(3)), (d, _at(4)))
    rows = _read(db, tasks.due, _at(5), 10)

    # Meanwhile a worker replaces d's row, the one with the highest id (on
    # SQLite without AUTOINCREMENT the next row, here c's, took its id),
    # and an operator requeues b's.
    with db.session() as session, session.begin():
        tasks.delete_for_order(session, d)
        new = tasks.add(session, c, REQUEST, _at(8))
        assert tasks.requeue(session, rows[1].id, _at(6))

    assert new > max(ids)
    # b's row is the row that was read and cast, requeued or not.
    assert _write(db, tasks.delete_as_read, rows) == {
        (a, CHECK), (b, CHECK), (c, CHECK)}
    assert _write(db, tasks.delete_as_read, rows) == set()
    assert _write(db, tasks.delete_as_read, []) == set()
    assert [(t.id, t.order_id, t.retry_task, t.retry_at)
            for t in _read(db, tasks.list_tasks)] == [
        (new, c, REQUEST, _at(8))]


@contract
def test_park_requeue_and_list_tasks(db):
    tasks = db.repositories.retry_tasks
    a, b = _order(db), _order(db)
    first, second, third = _tasks(db, (a, _at(1)), (b, _at(2)), (a, _at(3)))
    rows = _read(db, tasks.due, _at(5), 10)

    _write(db, tasks.park, rows[0], 'bad arguments')
    assert _write(db, tasks.requeue, second, _at(4))
    # By id: a requeue changes nothing of what made the row bad.
    _write(db, tasks.park, rows[1], 'read before the requeue')

    got = _read(db, tasks.get, first)
    assert (got.parked, got.park_reason) == (True, 'bad arguments')
    got = _read(db, tasks.get, second)
    assert (got.parked, got.park_reason, got.retry_at) == (
        True, 'read before the requeue', _at(4))
    assert [t.id for t in _read(db, tasks.list_tasks)] == [
        first, third, second]
    assert [t.id for t in _read(db, tasks.list_tasks, parked=True)] == [
        first, second]
    assert [t.id for t in _read(db, tasks.list_tasks, parked=False)] == [
        third]
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
    of_step = _write(db, tasks.add, a, REQUEST, _at(5))

    assert _write(db, tasks.delete, [first, fourth + 1000]) == 1
    assert _write(db, tasks.delete, []) == 0
    _write(db, tasks.delete_for_order, b)
    assert [t.id for t in _read(db, tasks.list_tasks)] == [second, of_step]
    _write(db, tasks.delete_for_order, a, REQUEST)
    _write(db, tasks.delete_for_order, a, step='missing')
    assert [t.id for t in _read(db, tasks.list_tasks)] == [second]
    _write(db, tasks.delete_for_order, a, step=CHECK)
    assert _read(db, tasks.list_tasks) == []


# Priorities: an order's and its retry rows'; the due order they make.

def _ranked(db, *specs):
    """Add one retry row per (retry_at seconds, priority), each of an order
    of that priority; returns their ids."""
    with db.session() as session, session.begin():
        ids = []
        for at, priority in specs:
            order = db.repositories.orders.create(
                session, order_types.get('certificate'), {}, NOW,
                priority=priority)
            ids.append(db.repositories.retry_tasks.add(
                session, order.id, CHECK, _at(at), args=[order.id],
                priority=priority))
        return ids


def _due_ids(db, now, limit, after=None):
    return [row.id for row in _read(db, db.repositories.retry_tasks.due,
                                    now, limit, after)]


@contract
def test_orders_and_retry_rows_have_a_priority_from_0_to_9(db):
    repos = db.repositories
    certificate = order_types.get('certificate')
    urgent = _write(db, repos.orders.create, certificate, {}, NOW,
                    priority=models.MAX_PRIORITY)
    plain = _order(db)

    assert urgent.priority == 9
    assert _read(db, repos.orders.get, urgent.id).priority == 9
    assert _read(db, repos.orders.get, plain).priority == 0
    assert _read(db, repos.orders.priorities,
                 [urgent.id, plain, 'missing']) == {urgent.id: 9, plain: 0}
    assert _read(db, repos.orders.priorities, []) == {}
    for wrong in (-1, 10, '5', None, True):
        with pytest.raises(ValueError):
            _write(db, repos.orders.create, certificate, {}, NOW,
                   priority=wrong)
        with pytest.raises(ValueError):
            _write(db, repos.retry_tasks.add, plain, CHECK, NOW,
                   priority=wrong)
    assert len(_read(db, repos.orders.list_orders)) == 2
    assert _read(db, repos.retry_tasks.list_tasks) == []


@contract
def test_due_rows_of_higher_priority_come_first(db):
    tasks = db.repositories.retry_tasks
    old_low, new_low, urgent, mid, future_urgent, parked_urgent = _ranked(
        db, (1, 0), (2, 0), (4, 9), (3, 5), (60, 9), (0, 9))
    [parked] = [row for row in _read(db, tasks.due, _at(5), 10)
                if row.id == parked_urgent]
    _write(db, tasks.park, parked, 'bad')

    # More due than the batch: the highest priorities, then the oldest.
    assert _due_ids(db, _at(5), 2) == [urgent, mid]
    assert _due_ids(db, _at(5), 3) == [urgent, mid, old_low]
    assert _due_ids(db, _at(5), 10) == [urgent, mid, old_low, new_low]
    rows = _read(db, tasks.due, _at(5), 10)
    assert [row.priority for row in rows] == [9, 5, 0, 0]
    assert rows[0].key == (9, _at(4), urgent)
    # A row not due yet is not due, whatever its priority.
    assert _due_ids(db, _at(3), 10) == [mid, old_low, new_low]
    assert _due_ids(db, _at(60), 1) == [urgent]


@contract
def test_keyset_paging_across_priorities_never_repeats_or_skips(db):
    # Rows at the same retry_at in several levels, and in one level (told
    # apart by id), a level with nothing due, and rows not yet due.
    specs = [(at % 4, priority) for at, priority in zip(
        range(40), [9, 0, 5, 0, 5, 9, 1, 0] * 5)]
    specs += [(30, 9), (30, 3), (30, 0)]
    ids = _ranked(db, *specs)
    by_id = dict(zip(ids, specs))
    expected = sorted((i for i in ids if by_id[i][0] <= 5),
                      key=lambda i: (-by_id[i][1], by_id[i][0], i))

    for limit in (1, 3, 7, 40, 41):
        seen, after = [], None
        while True:
            rows = _read(db, db.repositories.retry_tasks.due, _at(5),
                         limit, after)
            seen.extend(row.id for row in rows)
            if len(rows) < limit:
                break
            after = rows[-1].key
        assert seen == expected, limit


@contract
def test_a_row_written_before_the_last_key_read_waits_for_the_next_pass(
        db):
    tasks = db.repositories.retry_tasks
    urgent, low = _ranked(db, (1, 9), (2, 0))
    [first] = _read(db, tasks.due, _at(5), 1)
    later_urgent, later_low = _ranked(db, (0, 9), (3, 0))

    assert first.id == urgent
    # Behind the key of the last row read: a pass does not go back up.
    assert _due_ids(db, _at(5), 10, first.key) == [low, later_low]
    assert _due_ids(db, _at(5), 10) == [later_urgent, urgent, low,
                                        later_low]


@contract
def test_the_idle_probes_see_every_priority(db):
    tasks = db.repositories.retry_tasks
    _ranked(db, (60, 9), (30, 0), (90, 5))

    assert not _read(db, tasks.any_due, _at(29))
    assert _read(db, tasks.any_due, _at(30))
    assert _read(db, tasks.next_due_after, NOW) == _at(30)
    assert _read(db, tasks.next_due_after, _at(30)) == _at(60)
    assert _read(db, tasks.count_due, _at(60)) == 2


# End of the priorities block.


# Locks and services.

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


# Transactions.

@contract
def test_an_exception_in_a_transaction_writes_nothing(db):
    repos = db.repositories
    order_id = _order(db)
    _write(db, repos.locks.insert, 'held', 'r1@h', 'token-1', NOW)

    with pytest.raises(ZeroDivisionError):
        with db.session() as session, session.begin():
            repos.orders.create(session, order_types.get('fanout'), {}, NOW)
            assert repos.steps.claim(session, order_id, REQUEST, 0, NOW,
                                     'w1@h', _at(60))
            assert repos.orders.fail(session, order_id, NOW, 'no')
            repos.retry_tasks.add(session, order_id, CHECK, NOW)
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
            assert db.repositories.steps.claim(session, order.id, REQUEST,
                                               0, NOW, 'w1@h', _at(60))


@pytest.mark.parametrize('backend', ('postgresql', 'mysql'))
def test_a_write_transaction_reads_what_was_committed_since_it_began(
        database):
    # A worker writes several results in one transaction; a result read
    # after another process committed a parallel step must see it, or
    # neither result sees every step DONE. (SQLite and the fake let one
    # writer at a time: another cannot commit in between.)
    repos = database.repositories
    first, second = _claimed(database, 'w1@h'), _order(database)
    with database.session() as session, session.begin():
        assert repos.steps.finish(session, first, REQUEST, 1, NOW,
                                  models.STEP_DONE)
        assert repos.steps.for_order(session, second)[REQUEST].owner is None
        _write(database, repos.steps.claim, second, REQUEST, 0, NOW,
               'w2@h', _at(60))
        assert repos.steps.for_order(session, second)[REQUEST].owner == \
            'w2@h'


# What follows holds the fake to its own rules, for which a real
# database has no equivalent to compare with.

def test_fake_returns_copies():
    db = memory.InMemoryDatabase()
    order_id = _order(db, meta={'a': 1})
    order = _read(db, db.repositories.orders.get, order_id)
    order.meta['a'] = 2
    order.status = models.ERROR
    step = _step(db, order_id, REQUEST)
    step.generation = 5

    got = _read(db, db.repositories.orders.get, order_id)
    assert (got.status, got.meta) == (models.PENDING, {'a': 1})
    assert _step(db, order_id, REQUEST).generation == 0
    assert db.engine is None
    db.dispose()


def test_fake_refuses_writes_outside_a_write_transaction():
    db = memory.InMemoryDatabase()
    certificate = order_types.get('certificate')
    with pytest.raises(RuntimeError, match='reader'):
        _read(db, db.repositories.orders.create, certificate, {}, NOW)
    with db.session() as session:
        with pytest.raises(RuntimeError, match='outside'):
            db.repositories.orders.create(session, certificate, {}, NOW)
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
            db.repositories.steps.for_order(session, 'missing')


def test_fake_sessions_are_not_mixed():
    one, other = memory.InMemoryDatabase(), memory.InMemoryDatabase()
    with pytest.raises(TypeError):
        _read(one, other.repositories.orders.list_orders)
    with pytest.raises(TypeError):
        _read(one, other.repositories.steps.for_order, 'missing')


# Notifications: URLs, events, deliveries (steps named notify:<url id>).

HOOK = 'https://hooks.example.org/orders'


def _subscribed(db, *url_ids):
    """A certificate order with a delivery to each URL of ``url_ids``."""
    order_id = _order(db)
    names = [models.delivery_name(url_id) for url_id in url_ids]
    _write(db, db.repositories.steps.create, order_id, names, set(names),
           NOW)
    return order_id


@contract
def test_notification_urls(db):
    store = db.repositories.notifications
    added = _write(db, store.add_url, HOOK, NOW)
    other = _write(db, store.add_url, HOOK + '/2', NOW)
    assert (added.url, added.available, added.failures) == (HOOK, True, 0)
    with pytest.raises(db_exc.DBDuplicateEntry):
        _write(db, store.add_url, HOOK, NOW)
    assert _read(db, store.find_url, HOOK).id == added.id
    assert _read(db, store.find_url, HOOK + '/3') is None
    assert [url.id for url in _read(db, store.list_urls)] == [
        added.id, other.id]

    _write(db, store.url_failed, added.id, _at(1), 'HTTP 500', False)
    _write(db, store.url_failed, added.id, _at(2), 'HTTP 502', True)
    _write(db, store.url_failed, added.id, _at(3), 'HTTP 503', True)
    url = _read(db, store.get_url, added.id)
    assert (url.available, url.failures, url.last_error,
            url.last_failure_at, url.disabled_at, url.updated_at) == (
        False, 3, 'HTTP 503', _at(3), _at(2), _at(3))
    assert _read(db, store.count_unavailable_urls) == 1
    assert not _write(db, store.hold_url, added.id, _at(4))
    assert _read(db, store.get_url, added.id).updated_at == _at(4)

    _write(db, store.enable_url, added.id, _at(5))
    _write(db, store.url_succeeded, other.id)
    url = _read(db, store.get_url, added.id)
    assert (url.available, url.failures, url.disabled_at,
            url.updated_at) == (True, 0, None, _at(5))
    assert _write(db, store.hold_url, added.id, _at(6))
    _write(db, store.url_failed, added.id, _at(7), 'x', False)
    _write(db, store.url_succeeded, added.id)
    assert _read(db, store.get_url, added.id).failures == 0
    assert _read(db, store.count_unavailable_urls) == 0


@contract
def test_events_are_numbered_per_order(db):
    from worker.notifications import events
    store = db.repositories.notifications
    a, b = _order(db), _order(db)
    assert _read(db, store.last_sequence, a) == 0
    assert _write(db, store.add_events, a, events.status_changed(
        models.PENDING), NOW) == [1]
    assert _write(db, store.add_events, b, [
        events.Event('step.done', models.PENDING, step=REQUEST)], NOW) == [1]
    assert _write(db, store.add_events, a, events.status_changed(
        models.ERROR, 'step x failed'), _at(1)) == [2, 3]
    assert _read(db, store.last_sequence, a) == 3

    found = _read(db, store.events_of_order, a)
    assert [(e.sequence, e.event, e.status, e.step, e.detail, e.created_at)
            for e in found] == [
        (1, 'order.created', models.PENDING, None, None, NOW),
        (2, 'order.error', models.ERROR, None, {'reason': 'step x failed'},
         _at(1)),
        (3, 'order.end', models.ERROR, None, None, _at(1))]
    assert len({e.event_id for e in found}) == 3
    assert [e.sequence for e in _read(db, store.events_after, a, 1, 1)] == \
        [2]
    assert [e.sequence for e in _read(db, store.events_after, a, 1, 10)] == \
        [2, 3]
    assert [e.step for e in _read(db, store.events_of_order, b)] == [REQUEST]


@contract
def test_deliveries_wake_pause_and_resume(db):
    store, steps_repo = db.repositories.notifications, db.repositories.steps
    order_id = _subscribed(db, 1, 2)
    first, second = models.delivery_name(1), models.delivery_name(2)
    assert _read(db, store.deliveries, order_id) == {
        first: (models.STEP_PENDING, 0), second: (models.STEP_PENDING, 0)}
    assert _read(db, store.count_open_deliveries) == {
        models.STEP_PENDING: 2}

    # Claimed, then: the first sent everything, the second waits.
    for name in (first, second):
        assert _write(db, steps_repo.claim, order_id, name, 0, NOW, 'w',
                      _at(60))
    assert _write(db, steps_repo.record_delivery, order_id, first, 1,
                  _at(1), models.STEP_DONE, 4, 0)
    assert _write(db, steps_repo.record_delivery, order_id, second, 1,
                  _at(1), models.STEP_WAITING, 2, 7, 'HTTP 500')
    assert not _write(db, steps_repo.record_delivery, order_id, first, 1,
                      _at(1), models.STEP_DONE, 5, 0)
    done, waiting = (_step(db, order_id, first), _step(db, order_id, second))
    assert (done.status, done.output, done.finished_at, done.owner) == (
        models.STEP_DONE, {'delivered_sequence': 4}, _at(1), None)
    assert (waiting.status, waiting.output, waiting.failures,
            waiting.last_error) == (
        models.STEP_WAITING, {'delivered_sequence': 2}, 7, 'HTTP 500')
    assert _read(db, store.count_open_deliveries) == {
        models.STEP_WAITING: 1}

    # A new event wakes only the one that had sent everything.
    _write(db, store.wake, order_id, [first, second], _at(2))
    woken = _step(db, order_id, first)
    assert (woken.status, woken.dispatched_at, woken.finished_at) == (
        models.STEP_PENDING, _at(2), None)
    assert _step(db, order_id, second).status == models.STEP_WAITING

    assert _read(db, store.paused, 2, 10) == [(order_id, 1)]
    assert _read(db, store.paused, 1, 10) == []
    _write(db, store.resume, 2, [order_id], _at(3))
    resumed = _step(db, order_id, second)
    assert (resumed.status, resumed.dispatched_at, resumed.failures) == (
        models.STEP_PENDING, _at(3), 0)
    assert _read(db, store.paused, 2, 10) == []


@contract
def test_an_order_that_ends_keeps_its_deliveries_and_their_retry_rows(db):
    tasks = db.repositories.retry_tasks
    order_id = _subscribed(db, 1)
    delivery = models.delivery_name(1)
    _write(db, tasks.add, order_id, delivery, _at(5))
    _write(db, tasks.add, order_id, REQUEST, _at(5))

    revoked = _write(db, db.repositories.steps.revoke_open, order_id,
                     _at(1), 'order failed')
    _write(db, tasks.delete_for_order, order_id)

    assert sorted(revoked) == [CHECK, REQUEST]
    assert _step(db, order_id, delivery).status == models.STEP_PENDING
    assert [task.retry_task for task in _read(db, tasks.list_tasks)] == [
        delivery]
    _write(db, tasks.delete_for_order, order_id, delivery)
    assert _read(db, tasks.list_tasks) == []
