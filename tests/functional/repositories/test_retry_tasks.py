"""Retry rows, and the due order their priorities make, on every backend."""

import json

from oslo_db import exception as db_exc
import pytest

from tests.functional.repositories.shared import CHECK
from tests.functional.repositories.shared import contract
from tests.functional.repositories.shared import new_order
from tests.functional.repositories.shared import NOW
from tests.functional.repositories.shared import plus
from tests.functional.repositories.shared import read
from tests.functional.repositories.shared import REQUEST
from tests.functional.repositories.shared import sql_contract
from tests.functional.repositories.shared import write
from tests import singular
from worker.db import models
from worker.db import orders
from worker.db import retry_tasks
from worker import order_types


def _tasks(db, *specs):
    """Add one retry row per (order_id, retry_at); returns their ids."""
    with db.session() as session, session.begin():
        return [singular.add_retry(db.repositories.retry_tasks, session,
                                   order_id, CHECK, retry_at, args=[order_id],
                                   kwargs={'generation': 1})
                for order_id, retry_at in specs]


@sql_contract
def test_add_and_get_retry_rows(db):
    tasks = db.repositories.retry_tasks
    order_id = new_order(db)
    task = write(db, singular.on(tasks).add_retry, order_id, CHECK, plus(5),
                 args=('x', 1), kwargs={'generation': 2}, retry_count=3,
                 priority=7)
    bare = write(db, singular.on(tasks).add_retry, order_id, CHECK, plus(6),
                 now=plus(1))

    assert bare > task
    got = read(db, db.queries.retry_tasks.get, task)
    assert (got.order_id, got.retry_task, got.retry_at, got.retry_args,
            got.retry_kwargs, got.retry_count, got.priority, got.parked,
            got.park_reason, got.created_at) == (
        order_id, CHECK, plus(5), '["x", 1]', '{"generation": 2}', 3, 7,
        False, None, plus(5))
    got = read(db, db.queries.retry_tasks.get, bare)
    assert (got.retry_args, got.retry_kwargs, got.priority,
            got.created_at) == ('[]', '{}', 0, plus(1))
    assert read(db, db.queries.retry_tasks.get, bare + 1000) is None


@contract
def test_a_retry_row_needs_its_order(db):
    with pytest.raises(db_exc.DBReferenceError):
        write(db, singular.on(db.repositories.retry_tasks).add_retry,
              'missing', CHECK, NOW)
    assert read(db, db.repositories.retry_tasks.list_tasks) == []


@sql_contract
def test_due_rows_in_order_with_keyset_paging(db):
    tasks = db.repositories.retry_tasks
    a, b, c = (new_order(db) for _ in range(3))
    late, first, second, future, parked = _tasks(
        db, (a, plus(2)), (b, plus(1)), (c, plus(1)), (a, plus(9)),
        (b, plus(0)))
    [parked_row] = [row for row in read(db, tasks.due, plus(5), 10)
                    if row.id == parked]
    write(db, tasks.park, parked_row, 'bad')

    rows = read(db, tasks.due, plus(5), 10)
    assert [row.id for row in rows] == [first, second, late]
    assert all(isinstance(row, retry_tasks.DueTask) for row in rows)
    assert (rows[0].order_id, rows[0].retry_task, rows[0].retry_at,
            rows[0].retry_args, rows[0].retry_kwargs, rows[0].retry_count,
            rows[0].priority, rows[0].step_exists) == (
        b, CHECK, plus(1), '["%s"]' % b, '{"generation": 1}', 0, 0, True)
    assert [row.id for row in read(db, tasks.due, plus(5), 2)] == [
        first, second]
    assert rows[0].key == (0, plus(1), first)
    assert [row.id for row in read(db, tasks.due, plus(5), 10,
                                   rows[0].key)] == [second, late]
    assert read(db, tasks.due, plus(5), 10, rows[2].key) == []
    assert [row.id for row in read(db, tasks.due, plus(9), 10)] == [
        first, second, late, future]

    assert read(db, tasks.any_due, plus(1))
    assert not read(db, tasks.any_due, plus(0))  # only the parked row
    assert read(db, tasks.count_due, plus(5)) == 3
    assert read(db, tasks.count_due, plus(0)) == 0
    assert read(db, db.queries.retry_tasks.count_later,
                plus(5)) == 1      # future
    assert read(db, db.queries.retry_tasks.count_later, plus(0)) == 4
    assert read(db, tasks.count_parked) == 1
    assert read(db, tasks.next_due_after, plus(-1)) == plus(1)
    assert read(db, tasks.next_due_after, plus(2)) == plus(9)
    assert read(db, tasks.next_due_after, plus(9)) is None


@contract
def test_a_due_row_tells_whether_its_order_has_its_step(db):
    tasks = db.repositories.retry_tasks
    order_id = new_order(db)
    with db.session() as session, session.begin():
        for name, at in ((REQUEST, 1), ('format_hard_disk', 2),
                         ('check_domains', 3)):
            singular.add_retry(tasks, session, order_id, name, plus(at))

    assert [(row.retry_task, row.step_exists)
            for row in read(db, tasks.due, plus(5), 10)] == [
        (REQUEST, True), ('format_hard_disk', False),
        ('check_domains', False)]


@contract
def test_a_due_row_tells_its_orders_type(db):
    """Which topic its step is cast to (``worker.rpcapi.Topics``)."""
    tasks = db.repositories.retry_tasks
    certificate = new_order(db)
    fanout = new_order(db, type_name='fanout')
    with db.session() as session, session.begin():
        singular.add_retry(tasks, session, certificate, CHECK, plus(1))
        singular.add_retry(tasks, session, fanout, 'check_caa', plus(2))
        singular.add_retry(tasks, session, fanout, 'notify:1', plus(3))

    assert [(row.order_id, row.order_type)
            for row in read(db, tasks.due, plus(5), 10)] == [
        (certificate, 'certificate'), (fanout, 'fanout'),
        (fanout, 'fanout')]


@contract
def test_a_due_row_has_its_orders_trace_context_only_when_asked(db):
    """Tracing on reads it with the row (``worker.tracing``); off, the
    query is the one without tracing."""
    tasks = db.repositories.retry_tasks
    carrier = {'traceparent':
               '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'}
    traced = write(db, db.repositories.orders.create,
                   order_types.get('certificate'), {}, NOW,
                   origin=orders.Origin(trace_context=carrier)).id
    untraced = new_order(db)
    with db.session() as session, session.begin():
        singular.add_retry(tasks, session, traced, CHECK, plus(1))
        singular.add_retry(tasks, session, untraced, CHECK, plus(2))

    assert [row.trace_context for row in read(
        db, tasks.due, plus(5), 10, traces=True)] == [carrier, None]
    assert [row.trace_context for row in read(
        db, tasks.due, plus(5), 10)] == [None, None]


@sql_contract
def test_delete_as_read_deletes_by_id_and_ids_are_never_reused(db):
    tasks = db.repositories.retry_tasks
    a, b, c, d = (new_order(db) for _ in range(4))
    ids = _tasks(db, (a, plus(1)), (b, plus(2)), (c, plus(3)), (d, plus(4)))
    rows = read(db, tasks.due, plus(5), 10)

    # Meanwhile a worker replaces d's row, the one with the highest id (on
    # SQLite without AUTOINCREMENT the next row, here c's, took its id),
    # and an operator requeues b's.
    with db.session() as session, session.begin():
        tasks.delete_for_order(session, d)
        new = singular.add_retry(tasks, session, c, REQUEST, plus(8))
        assert db.queries.retry_tasks.requeue(session, rows[1].id, plus(6))

    assert new > max(ids)
    # b's row is the row that was read and cast, requeued or not.
    assert write(db, tasks.delete_as_read, rows) == {
        (a, CHECK), (b, CHECK), (c, CHECK)}
    assert write(db, tasks.delete_as_read, rows) == set()
    assert write(db, tasks.delete_as_read, []) == set()
    assert [(t.id, t.order_id, t.retry_task, t.retry_at)
            for t in read(db, tasks.list_tasks)] == [
        (new, c, REQUEST, plus(8))]


@sql_contract
def test_park_requeue_and_list_tasks(db):
    tasks = db.repositories.retry_tasks
    a, b = new_order(db), new_order(db)
    first, second, third = _tasks(db, (a, plus(1)), (b, plus(2)), (a, plus(3)))
    rows = read(db, tasks.due, plus(5), 10)

    write(db, tasks.park, rows[0], 'bad arguments')
    assert write(db, db.queries.retry_tasks.requeue, second, plus(4))
    # By id: a requeue changes nothing of what made the row bad.
    write(db, tasks.park, rows[1], 'read before the requeue')

    got = read(db, db.queries.retry_tasks.get, first)
    assert (got.parked, got.park_reason) == (True, 'bad arguments')
    got = read(db, db.queries.retry_tasks.get, second)
    assert (got.parked, got.park_reason, got.retry_at) == (
        True, 'read before the requeue', plus(4))
    assert [t.id for t in read(db, tasks.list_tasks)] == [
        first, third, second]
    assert [t.id for t in read(db, tasks.list_tasks, parked=True)] == [
        first, second]
    assert [t.id for t in read(db, tasks.list_tasks, parked=False)] == [
        third]
    assert [t.id for t in read(db, tasks.list_tasks, order_id=a)] == [
        first, third]
    assert [t.id for t in read(db, tasks.list_tasks, parked=False,
                               order_id=a)] == [third]

    assert write(db, db.queries.retry_tasks.requeue, first, plus(7))
    got = read(db, db.queries.retry_tasks.get, first)
    assert (got.parked, got.park_reason, got.retry_at) == (False, None,
                                                           plus(7))
    assert not write(db, db.queries.retry_tasks.requeue, third + 1000, plus(7))


@contract
def test_delete_retry_rows(db):
    tasks = db.repositories.retry_tasks
    a, b = new_order(db), new_order(db)
    first, second, third, fourth = _tasks(db, (a, plus(1)), (a, plus(2)),
                                          (b, plus(3)), (b, plus(4)))
    of_step = write(db, singular.on(tasks).add_retry, a, REQUEST, plus(5))

    write(db, tasks.delete_for_order, b)
    assert [t.id for t in read(db, tasks.list_tasks)] == [first, second,
                                                          of_step]
    write(db, tasks.delete_for_order, a, REQUEST)
    write(db, tasks.delete_for_order, a, step='missing')
    assert [t.id for t in read(db, tasks.list_tasks)] == [first, second]
    write(db, tasks.delete_for_order, a, step=CHECK)
    assert read(db, tasks.list_tasks) == []


@contract
def test_retry_rows_of_many_steps_are_added_and_deleted_at_once(db):
    tasks = db.repositories.retry_tasks
    first, second = new_order(db), new_order(db)
    kept = _tasks(db, (second, plus(1)))

    write(db, tasks.delete_for_steps, [(first, CHECK), (second, REQUEST)])
    write(db, tasks.add_many, [
        dict(order_id=first, retry_task=CHECK, retry_at=plus(5),
             args=[first], kwargs={'generation': 1}, retry_count=2,
             now=NOW, priority=3),
        dict(order_id=second, retry_task=REQUEST, retry_at=plus(6))])
    write(db, tasks.delete_for_steps, [])
    write(db, tasks.add_many, [])

    due = read(db, tasks.due, plus(10), 10)
    assert [(row.order_id, row.retry_task, row.retry_at, row.retry_args,
             row.retry_kwargs, row.retry_count, row.priority)
            for row in due] == [
        (first, CHECK, plus(5), json.dumps([first]),
         json.dumps({'generation': 1}), 2, 3),
        (second, CHECK, plus(1), json.dumps([second]),
         json.dumps({'generation': 1}), 0, 0),
        (second, REQUEST, plus(6), '[]', '{}', 0, 0)]
    assert kept[0] in [row.id for row in due]

    write(db, tasks.delete_for_steps, [(first, CHECK), (second, REQUEST)])
    assert [row.id for row in read(db, tasks.due, plus(10), 10)] == kept
    with pytest.raises(ValueError):
        write(db, tasks.add_many, [dict(order_id=first, retry_task=CHECK,
                                        retry_at=NOW, priority=99)])


def _ranked(db, *specs):
    """Add one retry row per (retry_at seconds, priority), each of an order
    of that priority; returns their ids."""
    with db.session() as session, session.begin():
        ids = []
        for at, priority in specs:
            order = db.repositories.orders.create(
                session, order_types.get('certificate'), {}, NOW,
                priority=priority)
            ids.append(singular.add_retry(db.repositories.retry_tasks, session,
                                          order.id, CHECK, plus(at),
                                          args=[order.id], priority=priority))
        return ids


def _due_ids(db, now, limit, after=None):
    return [row.id for row in read(db, db.repositories.retry_tasks.due,
                                   now, limit, after)]


@sql_contract
def test_orders_and_retry_rows_have_a_priority_from_0_to_9(db):
    repos = db.repositories
    certificate = order_types.get('certificate')
    urgent = write(db, repos.orders.create, certificate, {}, NOW,
                   priority=models.MAX_PRIORITY)
    plain = new_order(db)

    assert urgent.priority == 9
    assert read(db, repos.orders.get, urgent.id).priority == 9
    assert read(db, repos.orders.get, plain).priority == 0
    assert {order_id: origin.priority for order_id, origin in read(
        db, repos.orders.retry_origins,
        [urgent.id, plain, 'missing']).items()} == {urgent.id: 9, plain: 0}
    for wrong in (-1, 10, '5', None, True):
        with pytest.raises(ValueError):
            write(db, repos.orders.create, certificate, {}, NOW,
                  priority=wrong)
        with pytest.raises(ValueError):
            write(db, singular.on(repos.retry_tasks).add_retry, plain, CHECK,
                  NOW, priority=wrong)
    assert len(read(db, db.queries.orders.list_orders)) == 2
    assert read(db, repos.retry_tasks.list_tasks) == []


@contract
def test_due_rows_of_higher_priority_come_first(db):
    tasks = db.repositories.retry_tasks
    old_low, new_low, urgent, mid, future_urgent, parked_urgent = _ranked(
        db, (1, 0), (2, 0), (4, 9), (3, 5), (60, 9), (0, 9))
    [parked] = [row for row in read(db, tasks.due, plus(5), 10)
                if row.id == parked_urgent]
    write(db, tasks.park, parked, 'bad')

    # More due than the batch: the highest priorities, then the oldest.
    assert _due_ids(db, plus(5), 2) == [urgent, mid]
    assert _due_ids(db, plus(5), 3) == [urgent, mid, old_low]
    assert _due_ids(db, plus(5), 10) == [urgent, mid, old_low, new_low]
    rows = read(db, tasks.due, plus(5), 10)
    assert [row.priority for row in rows] == [9, 5, 0, 0]
    assert rows[0].key == (9, plus(4), urgent)
    # A row not due yet is not due, whatever its priority.
    assert _due_ids(db, plus(3), 10) == [mid, old_low, new_low]
    assert _due_ids(db, plus(60), 1) == [urgent]


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
            rows = read(db, db.repositories.retry_tasks.due, plus(5),
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
    [first] = read(db, tasks.due, plus(5), 1)
    later_urgent, later_low = _ranked(db, (0, 9), (3, 0))

    assert first.id == urgent
    # Behind the key of the last row read: a pass does not go back up.
    assert _due_ids(db, plus(5), 10, first.key) == [low, later_low]
    assert _due_ids(db, plus(5), 10) == [later_urgent, urgent, low,
                                         later_low]


@contract
def test_the_idle_probes_see_every_priority(db):
    tasks = db.repositories.retry_tasks
    _ranked(db, (60, 9), (30, 0), (90, 5))

    assert not read(db, tasks.any_due, plus(29))
    assert read(db, tasks.any_due, plus(30))
    assert read(db, tasks.next_due_after, NOW) == plus(30)
    assert read(db, tasks.next_due_after, plus(30)) == plus(60)
    assert read(db, tasks.count_due, plus(60)) == 2
