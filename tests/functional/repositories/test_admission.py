"""What admission and orders that start later need of the repositories,
on every backend: the PENDING count of a type, the lock row a bounded
type's creates hold, and an order whose first steps are not dispatched.
"""

from tests.functional.repositories.shared import contract
from tests.functional.repositories.shared import new_order
from tests.functional.repositories.shared import plus
from tests.functional.repositories.shared import read
from tests.functional.repositories.shared import ROOTS
from tests.functional.repositories.shared import write
from worker.db import models
from worker import order_types


@contract
def test_count_pending_counts_one_type_s_pending_orders(db):
    orders = db.repositories.orders
    assert read(db, orders.count_pending, 'certificate') == 0
    first = new_order(db)
    new_order(db)
    new_order(db, type_name='fanout')
    assert read(db, orders.count_pending, 'certificate') == 2
    write(db, orders.fail, first, plus(1), 'no')
    assert read(db, orders.count_pending, 'certificate') == 1
    assert read(db, orders.count_pending, 'fanout') == 1


@contract
def test_hold_locks_an_existing_row_only(db):
    locks = db.repositories.locks
    entity = 'OrderAdmission:certificate'
    assert not write(db, locks.hold, entity, plus(1))
    assert read(db, locks.get, entity) is None
    write(db, locks.insert, entity, 'h', 'token', plus(1))
    assert write(db, locks.hold, entity, plus(2))
    got = read(db, locks.get, entity)
    assert (got.owner_token, got.created_at) == ('token', plus(2))
    assert read(db, locks.get, models.ORDER_RETRY_TASK_LOCK) is None


@contract
def test_an_order_that_starts_later_has_its_first_steps_undispatched(db):
    repos = db.repositories
    start = plus(3600)
    order = write(db, repos.orders.create, order_types.get('fanout'), {},
                  plus(0), not_before=start)
    assert read(db, repos.orders.get, order.id).not_before == start
    steps = read(db, repos.steps.for_order, order.id)
    assert {name: (step.status, step.dispatched_at)
            for name, step in steps.items() if name in ROOTS} == {
        name: (models.STEP_PENDING, None) for name in ROOTS}
    assert steps['issue'].status == models.STEP_WAITING
    # Not a lost dispatch, however late it is.
    assert read(db, repos.steps.lost_dispatches, plus(10 ** 6), 10) == []
    # An order that starts at once has none.
    assert read(db, repos.orders.get, new_order(db)).not_before is None
