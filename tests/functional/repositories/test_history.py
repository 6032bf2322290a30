"""An order's history of runs, and what the recovery reads of a run it
takes back, on every backend."""

from oslo_db import exception as db_exc
import pytest

from tests.functional.repositories.shared import CHECK
from tests.functional.repositories.shared import claimed_order
from tests.functional.repositories.shared import contract
from tests.functional.repositories.shared import new_order
from tests.functional.repositories.shared import NOW
from tests.functional.repositories.shared import plus
from tests.functional.repositories.shared import read
from tests.functional.repositories.shared import REQUEST
from tests.functional.repositories.shared import write
from tests import singular
from worker.db import models
from worker.db import rows


def _run(order_id, step=REQUEST, generation=1, result=models.RUN_DONE,
         error=None, finished_at=plus(1)):
    return rows.StepRun(order_id, step, generation, generation, '7@h',
                        NOW, finished_at, result, error)


def _columns(run):
    return (run.order_id, run.step, run.generation, run.attempt,
            run.worker, run.started_at, run.finished_at, run.result,
            run.error)


@contract
def test_an_orders_runs_come_back_oldest_first_and_alone(db):
    history = db.repositories.history
    order_id, other = new_order(db), new_order(db)
    write(db, history.add_many, [
        _run(order_id, generation=1, result=models.RUN_RETRY, error='down'),
        _run(other)])
    # Written later, finished earlier: the order written is the order
    # read.
    write(db, history.add_many, [
        _run(order_id, generation=2, result=models.RUN_TAKEN_BACK,
             finished_at=NOW),
        rows.StepRun(order_id, CHECK, 1, 1, None, None, plus(2),
                     models.RUN_SUPERSEDED)])
    write(db, history.add_many, [])

    found = read(db, history.for_order, order_id)

    assert [_columns(run) for run in found] == [
        (order_id, REQUEST, 1, 1, '7@h', NOW, plus(1), models.RUN_RETRY,
         'down'),
        (order_id, REQUEST, 2, 2, '7@h', NOW, NOW, models.RUN_TAKEN_BACK,
         None),
        (order_id, CHECK, 1, 1, None, None, plus(2), models.RUN_SUPERSEDED,
         None)]
    assert found[0].id < found[1].id < found[2].id
    assert [run.result for run in read(db, history.for_order, other)] == [
        models.RUN_DONE]
    assert read(db, history.for_order, 'no-such-order') == []


@contract
def test_an_error_is_kept_to_its_bound(db):
    history = db.repositories.history
    order_id = new_order(db)
    bound = models.RUN_ERROR_LENGTH
    write(db, history.add_many, [
        _run(order_id, generation=1, error='x' * bound),
        _run(order_id, generation=2, error='é' * (bound + 1)),
        _run(order_id, generation=3, error='y' * (10 * bound))])

    kept = [run.error for run in read(db, history.for_order, order_id)]

    assert kept[0] == 'x' * bound
    assert [len(error) for error in kept] == [bound] * 3
    assert kept[1].startswith('é' * (bound - 3))
    assert kept[2].endswith('...')


@contract
def test_a_run_needs_its_order(db):
    with pytest.raises(db_exc.DBReferenceError):
        write(db, db.repositories.history.add_many, [_run('missing')])
    order_id = new_order(db)
    write(db, db.repositories.history.add_many, [_run(order_id)])


@contract
def test_the_recovery_reads_when_a_run_was_claimed_and_its_attempt(db):
    steps = db.repositories.steps
    dead = claimed_order(db, 'dead@h', at=plus(1), lease_until=plus(5))
    # Claimed a second time: its attempt is 2.
    assert write(db, steps.take_back, dead, REQUEST, 1, plus(6))
    assert write(db, singular.on(steps).claim, dead, REQUEST, 2, plus(7),
                 'dead@h', plus(8))

    [owned] = read(db, steps.owned_by, ['dead@h'], 10)
    [expired] = read(db, steps.expired_leases, plus(9), 10)

    assert owned == expired
    assert (owned.order_id, owned.generation, owned.owner,
            owned.claimed_at, owned.attempt) == (dead, 3, 'dead@h',
                                                 plus(7), 2)
