"""Steps: reads, fenced writes and recovery, on every backend."""

from oslo_db import exception as db_exc
import pytest

from tests.functional.repositories.shared import CHECK
from tests.functional.repositories.shared import claimed_order
from tests.functional.repositories.shared import contract
from tests.functional.repositories.shared import JOIN
from tests.functional.repositories.shared import new_order
from tests.functional.repositories.shared import NOW
from tests.functional.repositories.shared import plus
from tests.functional.repositories.shared import read
from tests.functional.repositories.shared import REQUEST
from tests.functional.repositories.shared import ROOTS
from tests.functional.repositories.shared import sql_contract
from tests.functional.repositories.shared import step_of
from tests.functional.repositories.shared import write
from tests import singular
from worker.db import models
from worker.db import steps
from worker import order_types


@contract
def test_with_steps_reads_an_order_and_its_steps_at_once(db):
    order_id = claimed_order(db, 'w-1')
    other = new_order(db)
    order, steps = read(db, singular.on(db.repositories.orders).with_steps,
                        order_id)
    assert order.id == order_id and order.type == 'certificate'
    assert sorted(steps) == sorted(order_types.get('certificate').names)
    assert all(step.order_id == order_id for step in steps.values())
    assert (steps[REQUEST].generation, steps[REQUEST].owner) == (1, 'w-1')
    assert read(db, singular.on(db.repositories.orders).with_steps,
                'missing') == \
        (None, {})
    assert read(db, singular.on(db.repositories.orders).with_steps,
                other)[0].id == \
        other


@contract
def test_with_steps_many_reads_orders_and_their_steps_at_once(db):
    claimed = claimed_order(db, 'w-1')
    fanout = new_order(db, type_name='fanout')
    repos = db.repositories

    found = read(db, repos.orders.with_steps_many,
                 {claimed, fanout, 'missing'})

    assert set(found) == {claimed, fanout}
    order, steps = found[fanout]
    assert (order.id, order.type) == (fanout, 'fanout')
    assert sorted(steps) == sorted(order_types.get('fanout').names)
    assert found[claimed][1][REQUEST].owner == 'w-1'
    assert read(db, repos.orders.with_steps_many, []) == {}


@contract
def test_claim_and_results_are_fenced_by_generation(db):
    steps_repo = db.repositories.steps
    order_id = new_order(db)

    assert write(db, singular.on(steps_repo).claim, order_id, REQUEST, 0,
                 plus(1), 'w1@h', plus(61))
    assert not write(db, singular.on(steps_repo).claim, order_id, REQUEST, 0,
                     plus(1), 'w2@h', plus(61))
    assert not write(db, singular.on(steps_repo).claim, order_id, CHECK, 0,
                     plus(1), 'w2@h', plus(61))       # WAITING
    assert not write(db, singular.on(steps_repo).claim, 'missing', REQUEST, 0,
                     plus(1), 'w2@h', plus(61))
    step = step_of(db, order_id, REQUEST)
    assert (step.generation, step.attempt, step.owner, step.claimed_at,
            step.lease_expires_at, step.dispatched_at, step.started_at,
            step.updated_at) == (1, 1, 'w1@h', plus(1), plus(61), None,
                                 plus(1), plus(1))

    assert not write(db, singular.on(steps_repo).retry, order_id, REQUEST, 0,
                     plus(2), 1, 0, 'down')
    assert write(db, singular.on(steps_repo).retry, order_id, REQUEST, 1,
                 plus(2), failures=1, polls=2, last_error='down')
    step = step_of(db, order_id, REQUEST)
    assert (step.status, step.generation, step.failures, step.polls,
            step.last_error, step.owner, step.claimed_at,
            step.lease_expires_at, step.updated_at) == (
        models.STEP_PENDING, 1, 1, 2, 'down', None, None, None, plus(2))

    # The second run keeps when the first started.
    assert write(db, singular.on(steps_repo).claim, order_id, REQUEST, 1,
                 plus(3), 'w2@h', plus(63))
    step = step_of(db, order_id, REQUEST)
    assert (step.generation, step.attempt, step.started_at) == (2, 2,
                                                                plus(1))
    # A poll clears the last error.
    assert write(db, singular.on(steps_repo).retry, order_id, REQUEST, 2,
                 plus(4), 0, 3)
    assert step_of(db, order_id, REQUEST).last_error is None
    assert write(db, singular.on(steps_repo).claim, order_id, REQUEST, 2,
                 plus(5), 'w2@h', plus(65))

    assert not write(db, singular.on(steps_repo).finish, order_id, REQUEST, 2,
                     plus(6), models.STEP_DONE, output={'x': 1})
    assert write(db, singular.on(steps_repo).finish, order_id, REQUEST, 3,
                 plus(6), models.STEP_DONE, output={'pair': (1, 2)})
    step = step_of(db, order_id, REQUEST)
    assert (step.status, step.generation, step.output, step.finished_at,
            step.owner, step.lease_expires_at, step.last_error) == (
        models.STEP_DONE, 3, {'pair': [1, 2]}, plus(6), None, None, None)

    # A finished step takes no further write, even with its own token.
    assert not write(db, singular.on(steps_repo).claim, order_id, REQUEST, 3,
                     plus(7), 'w1@h', plus(67))
    assert not write(db, singular.on(steps_repo).retry, order_id, REQUEST, 3,
                     plus(7), 1, 0)
    assert not write(db, singular.on(steps_repo).finish, order_id, REQUEST, 3,
                     plus(7), models.STEP_FAILED, last_error='late')
    assert not write(db, steps_repo.take_back, order_id, REQUEST, 3,
                     plus(7))
    assert step_of(db, order_id, REQUEST).status == models.STEP_DONE


@contract
def test_finish_failed_keeps_the_output_it_had(db):
    steps_repo = db.repositories.steps
    order_id = claimed_order(db, 'w1@h')

    assert write(db, singular.on(steps_repo).finish, order_id, REQUEST, 1,
                 plus(1), models.STEP_FAILED, last_error='refused')
    step = step_of(db, order_id, REQUEST)
    assert (step.status, step.last_error, step.output, step.finished_at,
            step.owner) == (models.STEP_FAILED, 'refused', None, plus(1),
                            None)


@contract
def test_start_makes_waiting_steps_pending(db):
    steps_repo = db.repositories.steps
    cast, delayed = new_order(db, type_name='fanout'), new_order(db)

    write(db, singular.on(steps_repo).start, cast, [JOIN, ROOTS[0], 'missing'],
          plus(5), True)
    write(db, singular.on(steps_repo).start, delayed, (CHECK,), plus(5), False)
    write(db, singular.on(steps_repo).start, delayed, [], plus(6), True)

    found = read(db, steps_repo.for_order, cast)
    assert (found[JOIN].status, found[JOIN].dispatched_at,
            found[JOIN].updated_at) == (models.STEP_PENDING, plus(5), plus(5))
    # Only WAITING steps start: a PENDING one keeps its dispatch.
    assert (found[ROOTS[0]].dispatched_at, found[ROOTS[0]].updated_at) == (
        NOW, NOW)
    assert found['poll'].status == models.STEP_WAITING
    check = step_of(db, delayed, CHECK)
    assert (check.status, check.dispatched_at) == (models.STEP_PENDING,
                                                   None)


def _fanout_running_and_done(db):
    """A fanout order whose first root runs on ``w1@h`` and whose second
    root is DONE (at generation 1)."""
    steps_repo = db.repositories.steps
    order_id = claimed_order(db, 'w1@h', step=ROOTS[0], type_name='fanout')
    assert write(db, singular.on(steps_repo).claim, order_id, ROOTS[1], 0, NOW,
                 'w1@h', plus(60))
    assert write(db, singular.on(steps_repo).finish, order_id, ROOTS[1], 1,
                 plus(1), models.STEP_DONE, output={})
    return order_id


@contract
def test_revoke_open_cancels_waiting_and_pending_steps(db):
    steps_repo = db.repositories.steps
    order_id = _fanout_running_and_done(db)

    revoked = write(db, steps_repo.revoke_open, order_id, plus(2), 'gone')

    assert sorted(revoked) == ['check_caa', 'check_key', 'issue', 'notify',
                               'poll', 'store']
    found = read(db, steps_repo.for_order, order_id)
    claimed = found[ROOTS[0]]
    assert (claimed.status, claimed.generation, claimed.owner,
            claimed.lease_expires_at, claimed.last_error,
            claimed.finished_at, claimed.updated_at) == (
        models.STEP_CANCELLED, 2, None, None, 'gone', plus(2), plus(2))
    assert (found[ROOTS[2]].generation, found[ROOTS[2]].dispatched_at) == (
        1, None)
    assert (found[JOIN].status, found[JOIN].generation) == (
        models.STEP_CANCELLED, 1)
    assert (found[ROOTS[1]].status, found[ROOTS[1]].generation) == (
        models.STEP_DONE, 1)
    # The run still going on the old token has no effect.
    assert not write(db, singular.on(steps_repo).finish, order_id, ROOTS[0], 1,
                     plus(3), models.STEP_DONE, output={})
    assert write(db, steps_repo.revoke_open, order_id, plus(3), 'x') == []
    assert write(db, steps_repo.revoke_open, 'missing', plus(3), 'x') == []


@sql_contract
def test_add_inserts_one_dispatched_step(db):
    steps_repo = db.repositories.steps
    order_id = new_order(db, type_name='fanout')

    write(db, db.queries.steps.add, order_id, 'revoke', plus(4))

    step = step_of(db, order_id, 'revoke')
    assert (step.status, step.generation, step.dispatched_at,
            step.updated_at) == (models.STEP_PENDING, 0, plus(4), plus(4))
    with pytest.raises(db_exc.DBDuplicateEntry):
        write(db, db.queries.steps.add, order_id, 'revoke', plus(5))
    with pytest.raises(db_exc.DBReferenceError):
        write(db, db.queries.steps.add, 'missing', 'revoke', plus(5))
    with pytest.raises(db_exc.DBReferenceError):
        write(db, steps_repo.create, 'missing', ['a', 'b'], {'a'}, plus(5))
    assert step_of(db, order_id, 'revoke').dispatched_at == plus(4)


@contract
def test_create_steps_of_an_order(db):
    steps_repo = db.repositories.steps
    order_id = new_order(db)

    write(db, steps_repo.create, order_id, ['b', 'a'], {'a'}, plus(1))

    found = read(db, steps_repo.for_order, order_id)
    assert list(found) == ['a', 'b', CHECK, REQUEST]
    assert (found['a'].status, found['a'].dispatched_at) == (
        models.STEP_PENDING, plus(1))
    assert (found['b'].status, found['b'].dispatched_at) == (
        models.STEP_WAITING, None)


@contract
def test_mark_dispatched_leaves_claimed_and_finished_steps_alone(db):
    steps_repo = db.repositories.steps
    order_id = _fanout_running_and_done(db)

    write(db, steps_repo.mark_dispatched,
          {(order_id, name) for name in ROOTS + (JOIN, 'missing')}, plus(5))
    write(db, steps_repo.mark_dispatched, [], plus(6))

    found = read(db, steps_repo.for_order, order_id)
    assert found[ROOTS[2]].dispatched_at == plus(5)
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
    first, second = (new_order(db, type_name='fanout') for _ in range(2))

    write(db, steps_repo.mark_dispatched,
          [(first, ROOTS[0]), (second, ROOTS[1]), (second, ROOTS[2])],
          plus(5))

    marked = {(order_id, name)
              for order_id in (first, second)
              for name, step in read(db, steps_repo.for_order,
                                     order_id).items()
              if step.dispatched_at == plus(5)}
    assert marked == {(first, ROOTS[0]), (second, ROOTS[1]),
                      (second, ROOTS[2])}


def _rows(rows):
    return [(row.order_id, row.step, row.generation, row.failures,
             row.owner) for row in rows]


@contract
def test_lost_dispatches_exclude_steps_with_a_retry_row(db):
    repos = db.repositories
    # Cast latest first: neither insertion nor key order is the answer.
    lost = [new_order(db, at=plus(seconds)) for seconds in (5, 4, 3, 2, 1)]
    claimed_order(db, 'w1@h', at=plus(0))
    waiting = new_order(db, at=plus(0))
    write(db, singular.on(repos.retry_tasks).add_retry, waiting, REQUEST,
          plus(9))
    # A row of another step of the order does not hide this one.
    other_step = new_order(db, at=plus(0.5))
    write(db, singular.on(repos.retry_tasks).add_retry, other_step, CHECK,
          plus(9))
    new_order(db, at=plus(10))  # cast at the cutoff

    rows = read(db, repos.steps.lost_dispatches, plus(10), 10)
    assert all(isinstance(row, steps.RecoveryRow) for row in rows)
    assert _rows(rows) == [(other_step, REQUEST, 0, 0, None)] + [
        (order_id, REQUEST, 0, 0, None) for order_id in reversed(lost)]
    assert [row.order_id for row in read(
        db, repos.steps.lost_dispatches, plus(10), 2)] == [
            other_step, lost[-1]]
    assert read(db, repos.steps.lost_dispatches, plus(0.5), 10) == []


@contract
def test_owners_and_owned_by(db):
    repos = db.repositories
    first, second = claimed_order(db, 'w1@h'), claimed_order(db, 'w2@h')
    retried = claimed_order(db, 'w1@h')
    write(db, singular.on(repos.retry_tasks).add_retry, retried, REQUEST, NOW)
    new_order(db)

    assert read(db, repos.steps.owners) == {'w1@h', 'w2@h'}
    rows = read(db, repos.steps.owned_by, ['w1@h', 'dead@h'], 10)
    assert _rows(rows) == [(first, REQUEST, 1, 0, 'w1@h')]
    assert {row.order_id for row in read(db, repos.steps.owned_by,
                                         {'w1@h', 'w2@h'}, 10)} == {
        first, second}
    assert len(read(db, repos.steps.owned_by, ['w1@h', 'w2@h'], 1)) == 1
    assert read(db, repos.steps.owned_by, [], 10) == []


@contract
def test_expired_leases(db):
    repos = db.repositories
    late = claimed_order(db, 'w1@h', lease_until=plus(30))
    later = claimed_order(db, 'w2@h', lease_until=plus(20))
    claimed_order(db, 'w1@h', lease_until=plus(40))       # at the cutoff
    done = claimed_order(db, 'w1@h', lease_until=plus(10))
    write(db, singular.on(repos.steps).finish, done, REQUEST, 1, plus(5),
          models.STEP_DONE, output={})
    retried = claimed_order(db, 'w1@h', lease_until=plus(10))
    write(db, singular.on(repos.steps).retry, retried, REQUEST, 1, plus(5), 1,
          0)

    rows = read(db, repos.steps.expired_leases, plus(40), 10)
    assert _rows(rows) == [(later, REQUEST, 1, 0, 'w2@h'),
                           (late, REQUEST, 1, 0, 'w1@h')]
    assert _rows(read(db, repos.steps.expired_leases, plus(40), 1)) == [
        (later, REQUEST, 1, 0, 'w2@h')]
    assert read(db, repos.steps.expired_leases, plus(20), 10) == []


@contract
def test_take_back(db):
    steps_repo = db.repositories.steps
    dead, expired = claimed_order(db, 'w1@h'), claimed_order(db, 'w1@h')
    assert write(db, singular.on(steps_repo).retry, expired, REQUEST, 1, NOW,
                 2, 0, 'down')
    assert write(db, singular.on(steps_repo).claim, expired, REQUEST, 1,
                 plus(1), 'w2@h', plus(2))

    assert not write(db, steps_repo.take_back, dead, REQUEST, 0, plus(5))
    assert not write(db, steps_repo.take_back, dead, CHECK, 0, plus(5))
    assert write(db, steps_repo.take_back, dead, REQUEST, 1, plus(5))
    step = step_of(db, dead, REQUEST)
    assert (step.status, step.generation, step.owner, step.claimed_at,
            step.lease_expires_at, step.dispatched_at, step.failures,
            step.last_error, step.updated_at) == (
        models.STEP_PENDING, 2, None, None, None, None, 0, None, plus(5))

    assert write(db, steps_repo.take_back, expired, REQUEST, 2, plus(5),
                 failed='its lease ended on w2@h')
    step = step_of(db, expired, REQUEST)
    assert (step.generation, step.owner, step.failures, step.last_error,
            step.attempt) == (3, None, 3, 'its lease ended on w2@h', 2)
    # The owner's late result has no effect.
    assert not write(db, singular.on(steps_repo).finish, expired, REQUEST, 2,
                     plus(6), models.STEP_DONE, output={})


@contract
def test_release_many_gives_back_claims_as_if_not_made(db):
    steps_repo = db.repositories.steps
    first, again, moved = (claimed_order(db, 'w1@h') for _ in range(3))
    # A second run of ``again``: its first run's start stays.
    assert write(db, singular.on(steps_repo).retry, again, REQUEST, 1, plus(1),
                 1, 0)
    assert write(db, singular.on(steps_repo).claim, again, REQUEST, 1, plus(2),
                 'w1@h', plus(60))
    assert write(db, steps_repo.take_back, moved, REQUEST, 1, plus(3),
                 crashed=True)

    assert write(db, steps_repo.release_many, [
        (first, REQUEST, 1, 0, None), (again, REQUEST, 2, 1, NOW),
        (moved, REQUEST, 1, 0, None)], plus(5)) == 2

    for order_id, generation, attempt, started_at in (
            (first, 1, 0, None), (again, 2, 1, NOW)):
        step = step_of(db, order_id, REQUEST)
        assert (step.status, step.generation, step.owner, step.claimed_at,
                step.lease_expires_at, step.attempt, step.started_at,
                step.crashes, step.dispatched_at, step.updated_at) == (
            models.STEP_PENDING, generation, None, None, None, attempt,
            started_at, 0, plus(5), plus(5))
    # Taken back meanwhile: left as the recovery left it.
    step = step_of(db, moved, REQUEST)
    assert (step.generation, step.crashes, step.dispatched_at) == (
        2, 1, None)
    # A message of the claim's token claims it again.
    assert write(db, singular.on(steps_repo).claim, first, REQUEST, 1, plus(6),
                 'w2@h', plus(60))


@contract
def test_extend_lease_is_fenced_by_token_and_owner(db):
    steps_repo = db.repositories.steps
    order_id = claimed_order(db, 'w1@h', lease_until=plus(10))

    assert write(db, steps_repo.extend_lease, order_id, REQUEST, 1, 'w1@h',
                 plus(5), plus(60))
    step = step_of(db, order_id, REQUEST)
    assert (step.lease_expires_at, step.owner, step.updated_at) == (
        plus(60), 'w1@h', plus(5))
    # Another owner, another token, another step: nothing moves.
    assert not write(db, steps_repo.extend_lease, order_id, REQUEST, 1,
                     'w2@h', plus(6), plus(90))
    assert not write(db, steps_repo.extend_lease, order_id, REQUEST, 0,
                     'w1@h', plus(6), plus(90))
    assert not write(db, steps_repo.extend_lease, order_id, CHECK, 1,
                     'w1@h', plus(6), plus(90))
    assert step_of(db, order_id, REQUEST).lease_expires_at == plus(60)
    # Once taken back, or released by its own result, it holds no lease.
    assert write(db, steps_repo.take_back, order_id, REQUEST, 1, plus(7),
                 crashed=True)
    assert not write(db, steps_repo.extend_lease, order_id, REQUEST, 2,
                     'w1@h', plus(8), plus(90))
    released = claimed_order(db, 'w1@h')
    assert write(db, singular.on(steps_repo).retry, released, REQUEST, 1,
                 plus(5), 1, 0)
    assert not write(db, steps_repo.extend_lease, released, REQUEST, 1,
                     'w1@h', plus(6), plus(90))


@contract
def test_take_back_counts_a_crash(db):
    steps_repo = db.repositories.steps
    order_id = claimed_order(db, 'w1@h')
    assert write(db, steps_repo.take_back, order_id, REQUEST, 1, plus(5),
                 crashed=True)
    step = step_of(db, order_id, REQUEST)
    assert (step.generation, step.crashes, step.failures, step.owner) == (
        2, 1, 0, None)
    # The recovery's rows carry the count, for its log line.
    assert write(db, singular.on(steps_repo).claim, order_id, REQUEST, 2,
                 plus(6), 'w2@h', plus(60))
    [row] = read(db, steps_repo.owned_by, ['w2@h'], 10)
    assert row.crashes == 1
    assert step_of(db, new_order(db), REQUEST).crashes == 0
    # A run that writes its result ran to its end: the crashes in a row
    # are over.
    assert write(db, singular.on(steps_repo).retry, order_id, REQUEST, 3,
                 plus(7), 0, 1)
    assert step_of(db, order_id, REQUEST).crashes == 0


def _columns(step):
    """Every column of a step row, to compare rows by value."""
    return tuple(getattr(step, column.key)
                 for column in models.OrderStep.__table__.columns)


@sql_contract
def test_restart_runs_steps_again_from_scratch_under_a_new_generation(db):
    steps_repo = db.repositories.steps
    order_id = _fanout_running_and_done(db)
    assert write(db, singular.on(steps_repo).finish, order_id, ROOTS[0], 1,
                 plus(1), models.STEP_FAILED, last_error='refused')
    write(db, steps_repo.revoke_open, order_id, plus(2), 'order failed')
    before = read(db, steps_repo.for_order, order_id)

    restarted = write(db, db.queries.steps.restart, order_id,
                      [ROOTS[0], ROOTS[2], ROOTS[1]], [JOIN, 'poll'],
                      plus(3))

    # The DONE step is left alone, even when named.
    assert restarted == {ROOTS[0]: 2, ROOTS[2]: 2, JOIN: 2, 'poll': 2}
    found = read(db, steps_repo.for_order, order_id)
    assert _columns(found[ROOTS[1]]) == _columns(before[ROOTS[1]])
    for name in (ROOTS[0], ROOTS[2]):
        step = found[name]
        assert (step.status, step.generation, step.attempt, step.failures,
                step.polls, step.crashes, step.owner, step.claimed_at,
                step.lease_expires_at, step.dispatched_at, step.started_at,
                step.finished_at, step.last_error, step.output,
                step.updated_at) == (
            models.STEP_PENDING, restarted[name], 0, 0, 0, 0, None, None,
            None, plus(3), None, None, None, None, plus(3)), name
    for name in (JOIN, 'poll'):
        assert (found[name].status, found[name].generation,
                found[name].dispatched_at, found[name].finished_at,
                found[name].last_error) == (
            models.STEP_WAITING, 2, None, None, None), name
    # Steps not named are not touched.
    assert _columns(found['store']) == _columns(before['store'])
    # A message of the old generation claims nothing; one of the new does.
    assert not write(db, singular.on(steps_repo).claim, order_id, ROOTS[0], 1,
                     plus(4), 'w2@h', plus(60))
    assert write(db, singular.on(steps_repo).claim, order_id, ROOTS[0], 2,
                 plus(4), 'w2@h', plus(60))
    claimed = step_of(db, order_id, ROOTS[0])
    assert (claimed.attempt, claimed.started_at) == (1, plus(4))
    assert write(db, db.queries.steps.restart, order_id, [], [], plus(5)) == {}
