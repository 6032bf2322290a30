"""Concurrent claims and the batched writes of several steps or orders,
on every backend."""

import threading

from tests.functional.repositories.shared import CHECK
from tests.functional.repositories.shared import claimed_order
from tests.functional.repositories.shared import contract
from tests.functional.repositories.shared import new_order
from tests.functional.repositories.shared import NOW
from tests.functional.repositories.shared import plus
from tests.functional.repositories.shared import read
from tests.functional.repositories.shared import REQUEST
from tests.functional.repositories.shared import ROOTS
from tests.functional.repositories.shared import step_of
from tests.functional.repositories.shared import write
from tests import singular
from worker.db import models


@contract
def test_concurrent_claims_have_one_winner(db):
    order_id = new_order(db)
    barrier = threading.Barrier(8)
    won = []

    def claim(owner):
        barrier.wait()
        won.append(write(db, singular.on(db.repositories.steps).claim,
                         order_id, REQUEST, 0, NOW, owner, plus(60)))

    threads = [threading.Thread(target=claim, args=('w%d@h' % i,))
               for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(won) == [False] * 7 + [True]
    step = step_of(db, order_id, REQUEST)
    assert (step.generation, step.attempt) == (1, 1)


@contract
def test_claim_many_claims_the_steps_still_at_their_generation(db):
    steps_repo = db.repositories.steps
    fresh, later, by_other, by_me_before = (new_order(db) for _ in range(4))
    assert write(db, singular.on(steps_repo).claim, by_other, REQUEST, 0, NOW,
                 'other@h', plus(60))
    # Claimed by this owner before: same owner and generation, but not
    # this claim (told apart by its time).
    assert write(db, singular.on(steps_repo).claim, by_me_before, REQUEST, 0,
                 plus(-1), 'me@h', plus(60))

    claimed = write(db, steps_repo.claim_many, [
        (fresh, REQUEST, 0, plus(60)), (by_other, REQUEST, 0, plus(60)),
        (later, REQUEST, 0, plus(90)), (by_me_before, REQUEST, 0, plus(60))],
        NOW, 'me@h')

    assert claimed == {(fresh, REQUEST), (later, REQUEST)}
    for order_id, lease in ((fresh, plus(60)), (later, plus(90))):
        step = step_of(db, order_id, REQUEST)
        assert (step.generation, step.owner, step.claimed_at,
                step.lease_expires_at, step.attempt, step.started_at,
                step.dispatched_at) == (1, 'me@h', NOW, lease, 1, NOW, None)
    assert step_of(db, by_other, REQUEST).owner == 'other@h'
    assert step_of(db, by_me_before, REQUEST).claimed_at == plus(-1)
    # Every step claimed: no read needed, the same answer.
    assert write(db, steps_repo.claim_many,
                 [(fresh, CHECK, 0, plus(60))], NOW, 'me@h') == set()
    assert write(db, steps_repo.claim_many, [], NOW, 'me@h') == set()


@contract
def test_claim_many_claims_each_order_s_own_steps_only(db):
    """Several names and generations in one batch: a step is claimed only
    as asked for its own order, at its own generation."""
    steps_repo = db.repositories.steps
    first, second = (new_order(db, type_name='fanout') for _ in range(2))

    claimed = write(db, steps_repo.claim_many, [
        (first, ROOTS[0], 0, plus(60)), (first, ROOTS[1], 0, plus(60)),
        (second, ROOTS[0], 5, plus(60)), (second, ROOTS[2], 0, plus(60))],
        NOW, 'me@h')

    assert claimed == {(first, ROOTS[0]), (first, ROOTS[1]),
                       (second, ROOTS[2])}
    owned = {(order_id, name)
             for order_id in (first, second)
             for name, step in read(db, steps_repo.for_order,
                                    order_id).items()
             if step.owner == 'me@h'}
    assert owned == claimed


@contract
def test_steps_of_many_orders_end_retry_and_start_each_fenced(db):
    """The ``*_many`` writes of a batch of results: each step as the
    single write would leave it, and a stale token counted out."""
    steps_repo = db.repositories.steps
    done, failed, retried, stale = (claimed_order(db, 'w1@h')
                                    for _ in range(4))

    assert write(db, steps_repo.finish_many, [
        (done, REQUEST, 1, models.STEP_DONE, {'x': 1}, None),
        (failed, REQUEST, 1, models.STEP_FAILED, None, 'refused'),
        (stale, REQUEST, 5, models.STEP_DONE, {'x': 2}, None)],
        plus(1)) == 2
    assert write(db, steps_repo.retry_many, [
        (retried, REQUEST, 1, 2, 3, 'later'),
        (stale, REQUEST, 0, 1, 0, None)], plus(2)) == 1
    write(db, steps_repo.start_many, [(done, [CHECK], True),
                                      (failed, (CHECK,), False)], plus(3))

    found = {order_id: read(db, steps_repo.for_order, order_id)
             for order_id in (done, failed, retried, stale)}
    assert [(step.status, step.output, step.last_error, step.finished_at,
             step.owner) for step in (found[done][REQUEST],
                                      found[failed][REQUEST])] == [
        (models.STEP_DONE, {'x': 1}, None, plus(1), None),
        (models.STEP_FAILED, None, 'refused', plus(1), None)]
    step = found[retried][REQUEST]
    assert (step.status, step.failures, step.polls, step.last_error,
            step.owner, step.updated_at) == (
        models.STEP_PENDING, 2, 3, 'later', None, plus(2))
    step = found[stale][REQUEST]
    assert (step.status, step.owner, step.failures, step.updated_at) == (
        models.STEP_PENDING, 'w1@h', 0, NOW)
    assert [(found[order_id][CHECK].status,
             found[order_id][CHECK].dispatched_at)
            for order_id in (done, failed, stale)] == [
        (models.STEP_PENDING, plus(3)), (models.STEP_PENDING, None),
        (models.STEP_WAITING, None)]
    assert write(db, steps_repo.finish_many, [], plus(4)) == 0
    assert write(db, steps_repo.retry_many, [], plus(4)) == 0


@contract
def test_many_orders_complete_at_once_each_with_its_metadata(db):
    orders = db.repositories.orders
    first, second, failed = (new_order(db, meta={'a': 1}) for _ in range(3))
    assert write(db, orders.fail, failed, plus(1), 'broken')

    assert write(db, orders.complete_many, [
        (first, {'a': 1, 'n': 1}), (second, {'a': 1, 'n': 2}),
        (failed, {'n': 3})], plus(2)) == 2

    assert [(order.status, order.meta, order.updated_at) for order in (
        read(db, orders.get, order_id) for order_id in (first, second,
                                                        failed))] == [
        (models.ACTIVE, {'a': 1, 'n': 1}, plus(2)),
        (models.ACTIVE, {'a': 1, 'n': 2}, plus(2)),
        (models.ERROR, {'a': 1}, plus(1))]
    assert write(db, orders.complete_many, [], plus(3)) == 0


@contract
def test_concurrent_batch_claims_have_one_winner_per_step(db):
    order_ids = [new_order(db) for _ in range(3)]
    barrier = threading.Barrier(6)
    won = []

    def claim(owner):
        barrier.wait()
        won.extend(write(db, db.repositories.steps.claim_many, [
            (order_id, REQUEST, 0, plus(60)) for order_id in order_ids],
            NOW, owner))

    threads = [threading.Thread(target=claim, args=('w%d@h' % i,))
               for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(won) == sorted((order_id, REQUEST)
                                 for order_id in order_ids)
    assert {step_of(db, order_id, REQUEST).generation
            for order_id in order_ids} == {1}
