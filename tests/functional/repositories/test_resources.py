"""Resource slots, rate starts and waiting steps, on every backend."""

import threading
import time

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
from worker.db import resources


@contract
def test_a_slot_has_one_holder_and_a_duplicate_aborts_nothing(db):
    store = db.repositories.resources
    first, second = new_order(db), new_order(db)
    with db.session() as session, session.begin():
        assert store.take(session, 'ca:x', 0, (first, REQUEST, 1), NOW)
        # Taken: nothing written, and the transaction goes on.
        assert not store.take(session, 'ca:x', 0, (second, REQUEST, 1), NOW)
        assert store.take(session, 'ca:x', 1, (second, REQUEST, 1), NOW)
        assert store.take(session, 'ca:y', 0, (second, REQUEST, 1), NOW)

    assert read(db, store.held, ['ca:x', 'ca:y', 'ca:z']) == {
        'ca:x': {0, 1}, 'ca:y': {0}, 'ca:z': set()}


@contract
def test_release_frees_only_the_slots_of_that_token(db):
    store = db.repositories.resources
    order_id = new_order(db)
    write(db, store.take, 'ca:x', 0, (order_id, REQUEST, 2), NOW)
    write(db, store.take, 'ca:y', 0, (order_id, REQUEST, 2), NOW)

    # A stale run (token 1) frees nothing.
    assert write(db, store.release, [(order_id, REQUEST, 1)]) == {}
    assert write(db, store.release, [(order_id, REQUEST, 2)]) == {
        'ca:x': 1, 'ca:y': 1}
    assert read(db, store.held, ['ca:x', 'ca:y']) == {'ca:x': set(),
                                                      'ca:y': set()}


@contract
def test_give_back_undoes_a_take(db):
    store = db.repositories.resources
    order_id = new_order(db)
    write(db, store.take, 'ca:x', 0, (order_id, REQUEST, 1), NOW)
    write(db, store.take, 'ca:x', 1, (order_id, REQUEST, 1), NOW)
    write(db, store.give_back, [('ca:x', 1)])
    assert read(db, store.held, ['ca:x']) == {'ca:x': {0}}


@contract
def test_the_sweep_frees_slots_whose_holder_no_longer_runs(db):
    store = db.repositories.resources
    running = claimed_order(db, 'w1')  # REQUEST at generation 1, owned
    ended = new_order(db)  # REQUEST at generation 0, no owner
    write(db, store.take, 'ca:x', 0, (running, REQUEST, 1), NOW)
    write(db, store.take, 'ca:x', 1, (ended, REQUEST, 1), NOW)
    write(db, store.take, 'ca:x', 2, (running, REQUEST, 0), NOW)

    assert read(db, store.orphans, 10) == [('ca:x', 1), ('ca:x', 2)]
    assert write(db, store.sweep, 10) == {'ca:x': 2}
    assert read(db, store.held, ['ca:x']) == {'ca:x': {0}}
    assert read(db, store.orphans, 10) == []


def _waiting_row(db, order_id, key, retry_at=NOW):
    return write(db, singular.on(db.repositories.retry_tasks).add_retry,
                 order_id, REQUEST, retry_at, args=[order_id],
                 kwargs={'generation': 0}, waiting_for=key)


@sql_contract
def test_waiting_rows_oldest_first_and_made_due(db):
    store = db.repositories.resources
    orders = [new_order(db) for _ in range(3)]
    ids = [_waiting_row(db, order_id, 'ca:x', plus(30))
           for order_id in orders]
    _waiting_row(db, new_order(db), 'ca:y', plus(30))

    waiting = read(db, store.waiting, 'ca:x', 2)
    assert [row.id for row in waiting] == ids[:2]
    # A woken step is cast to its type's topic.
    assert {row.order_type for row in waiting} == {'certificate'}
    assert write(db, store.make_due, {'ca:x': 2}, plus(1)) == 2
    tasks = db.repositories.retry_tasks
    due = read(db, tasks.due, plus(1), 10)
    assert [row.id for row in due] == ids[:2]
    assert [read(db, db.queries.retry_tasks.get, task_id).waiting_for
            for task_id in ids] == [None, None, 'ca:x']


@contract
def test_undispatch_only_an_unowned_pending_step_at_its_generation(db):
    store = db.repositories.resources
    waiting = new_order(db)
    running = claimed_order(db, 'w1')
    assert step_of(db, waiting, REQUEST).dispatched_at == NOW

    assert write(db, store.undispatch, [
        (waiting, REQUEST, 0), (running, REQUEST, 1),
        (running, REQUEST, 0)], plus(1)) == 1
    assert step_of(db, waiting, REQUEST).dispatched_at is None


@contract
def test_a_start_row_is_used_at_most_once_a_period(db):
    store = db.repositories.resources
    write(db, store.add_starts, 'api:x', [0, 1])
    write(db, store.add_starts, 'api:x', [1, 2])
    assert read(db, store.starts, 'api:x') == dict.fromkeys(
        [0, 1, 2], resources.NEVER)

    assert write(db, store.take_start, 'api:x', 0, NOW, plus(-1))
    # Used at NOW: not free before NOW + 1 s.
    assert not write(db, store.take_start, 'api:x', 0, plus(0.5),
                     plus(-0.5))
    assert write(db, store.take_start, 'api:x', 0, plus(1), NOW)
    write(db, store.give_back_start, 'api:x', 0, plus(1), NOW)
    assert read(db, store.starts, 'api:x')[0] == NOW


@contract
def test_an_order_deleted_takes_its_slots(db):
    store = db.repositories.resources
    order_id = new_order(db)
    write(db, store.take, 'ca:x', 0, (order_id, REQUEST, 1), NOW)
    write(db, db.repositories.orders.fail, order_id, NOW, 'test')
    write(db, db.repositories.purge.delete, [order_id], ('ERROR',),
          plus(1))
    assert read(db, store.held, ['ca:x']) == {'ca:x': set()}


def test_two_claims_take_one_slot_each_concurrently(database):
    """Two transactions at once on the same free slot: one waits for the
    other and finds it taken, without an error; it takes the next."""
    store = database.repositories.resources
    orders = [new_order(database) for _ in range(2)]
    first_took = threading.Event()
    taken = {}

    def claim(order_id, wait):
        with database.session() as session, session.begin():
            held = store.held(session, ['ca:x'])['ca:x']
            for slot in range(2):
                if slot not in held and store.take(
                        session, 'ca:x', slot, (order_id, REQUEST, 1), NOW):
                    taken[order_id] = slot
                    break
            first_took.set()
            wait()

    release = threading.Event()
    holder = threading.Thread(target=claim,
                              args=(orders[0], lambda: release.wait(5)))
    holder.start()
    first_took.wait(5)
    first_took.clear()
    other = threading.Thread(target=claim, args=(orders[1], lambda: None))
    other.start()
    # The other is at its INSERT of slot 0, waiting for the first.
    time.sleep(0.5)
    release.set()
    holder.join(10)
    other.join(10)
    assert sorted(taken.values()) == [0, 1]
    assert read(database, store.held, ['ca:x']) == {'ca:x': {0, 1}}
