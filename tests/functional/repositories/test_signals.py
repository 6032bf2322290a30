"""The signals' rows on every backend: stored once per ``signal_id``,
shown to a step until consumed, and a step's waiting retry row woken by
one it has not seen (``worker.db.signals``)."""

from oslo_db import exception as db_exc
import pytest

from tests.functional.repositories.shared import CHECK
from tests.functional.repositories.shared import contract
from tests.functional.repositories.shared import new_order
from tests.functional.repositories.shared import plus
from tests.functional.repositories.shared import read
from tests.functional.repositories.shared import sql_contract
from tests.functional.repositories.shared import write

ISSUED = 'certificate.issued'


def _pending(db, order_id, names=(ISSUED,)):
    found = read(db, db.repositories.signals.unconsumed_many, {order_id},
                 set(names))
    return [(row.signal_id, row.name, row.payload)
            for row in found.get(order_id, ())]


def _retry_at(db, order_id):
    [row] = read(db, db.repositories.retry_tasks.list_tasks,
                 order_id=order_id)
    return row.retry_at


@contract
def test_a_step_sees_its_signals_until_consumed_and_is_woken_by_new_ones(
        db):
    signals = db.repositories.signals
    order_id, other = new_order(db), new_order(db)
    first = write(db, signals.add, order_id, 's1', ISSUED, {'n': 1}, plus(1))
    write(db, signals.add, order_id, 's2', 'other.signal', None, plus(2))
    write(db, signals.add, other, 's1', ISSUED, [1, 2], plus(2))
    with pytest.raises(db_exc.DBDuplicateEntry):
        write(db, signals.add, order_id, 's1', ISSUED, None, plus(3))

    assert _pending(db, order_id) == [('s1', ISSUED, {'n': 1})]
    assert _pending(db, order_id, (ISSUED, 'other.signal')) == [
        ('s1', ISSUED, {'n': 1}), ('s2', 'other.signal', None)]

    write(db, db.repositories.retry_tasks.add_many, [dict(
        order_id=order_id, retry_task=CHECK, retry_at=plus(3600),
        args=[order_id], kwargs={'generation': 1}, now=plus(0))])
    # Nothing after the signal the step saw: its row waits.
    assert not write(db, signals.wake, order_id, CHECK, (ISSUED,),
                     first.id, plus(5))
    assert _retry_at(db, order_id) == plus(3600)
    assert write(db, signals.wake, order_id, CHECK, (ISSUED,), 0, plus(5))
    assert _retry_at(db, order_id) == plus(5)
    # Due already: a second wake changes nothing.
    assert not write(db, signals.wake, order_id, CHECK, (ISSUED,), 0,
                     plus(6))

    assert write(db, signals.consume, order_id, CHECK, [first.id],
                 plus(7)) == 1
    assert write(db, signals.consume, order_id, CHECK, [first.id],
                 plus(8)) == 0
    assert _pending(db, order_id) == []
    assert _pending(db, other) == [('s1', ISSUED, [1, 2])]


@sql_contract
def test_an_order_s_signals_in_the_order_they_were_sent(db):
    order_id = new_order(db)
    for signal_id in ('b', 'a', 'c'):
        write(db, db.queries.signals.add, order_id, signal_id, ISSUED, None,
              plus(1))
    assert [row.signal_id for row in read(
        db, db.queries.signals.for_order, order_id)] == ['b', 'a', 'c']
    assert read(db, db.queries.signals.find, order_id, 'a').name == ISSUED
    assert read(db, db.queries.signals.find, order_id, 'A') is None
