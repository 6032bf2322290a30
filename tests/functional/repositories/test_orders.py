"""Orders: creation, reads and status moves, on every backend."""

from oslo_db import exception as db_exception
import pytest

from tests.functional.repositories.shared import CHECK
from tests.functional.repositories.shared import claimed_order
from tests.functional.repositories.shared import contract
from tests.functional.repositories.shared import new_order
from tests.functional.repositories.shared import plus
from tests.functional.repositories.shared import read
from tests.functional.repositories.shared import REQUEST
from tests.functional.repositories.shared import ROOTS
from tests.functional.repositories.shared import sql_contract
from tests.functional.repositories.shared import write
from tests import singular
from worker.db import models
from worker.db import orders
from worker import order_types


@sql_contract
def test_create_get_and_list_orders(db):
    repos = db.repositories
    first = write(db, repos.orders.create, order_types.get('certificate'),
                  {'pair': (1, 2)}, plus(1))
    second = new_order(db, at=plus(0), type_name='fanout')
    third = new_order(db, at=plus(2))
    write(db, repos.orders.fail, third, plus(3), 'no')

    assert (first.type, first.status, first.error_reason, first.created_at,
            first.updated_at) == ('certificate', models.PENDING, None,
                                  plus(1), plus(1))
    with db.session() as session:  # a read without begin()
        order = repos.orders.get(session, first.id)
        assert repos.orders.get(session, 'missing') is None
    assert order.meta == {'pair': [1, 2]}  # as JSON gives it back
    assert (order.type, order.error_reason, order.updated_at) == (
        'certificate', None, plus(1))
    assert [o.id for o in read(db, db.queries.orders.list_orders)] == [
        second, first.id, third]
    assert [o.id for o in read(db, db.queries.orders.list_orders,
                               status=models.PENDING, limit=1)] == [second]
    assert read(db, db.queries.orders.count_by_status) == {
        models.PENDING: 2, models.ERROR: 1}
    assert read(db, db.queries.orders.count_unfinished_by_type) == {
        'certificate': 1, 'fanout': 1}
    assert read(db, repos.orders.count_unfinished_by_status) == {
        models.PENDING: 2}


@contract
def test_create_makes_the_first_steps_pending_and_dispatched(db):
    certificate = new_order(db, at=plus(1))
    fanout = new_order(db, at=plus(2), type_name='fanout')

    found = {order_id: read(db, db.repositories.steps.for_order, order_id)
             for order_id in (fanout, certificate)}
    assert read(db, db.repositories.steps.for_order, 'missing') == {}
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
        None, plus(1), None, None, None, None, plus(1))
    check = found[certificate][CHECK]
    assert (check.status, check.dispatched_at) == (models.STEP_WAITING,
                                                   None)
    assert {name: step.status for name, step in found[fanout].items()
            if step.status == models.STEP_PENDING} == {
        name: models.STEP_PENDING for name in ROOTS}
    assert {step.dispatched_at for step in found[fanout].values()} == {
        plus(2), None}


@sql_contract
def test_order_status_moves_start_from_their_status(db):
    orders = db.repositories.orders
    done, failed, locked = (new_order(db, meta={'a': 1, 'b': 2})
                            for _ in range(3))

    assert write(db, orders.lock_live, locked, plus(1))
    assert not write(db, orders.lock_live, 'missing', plus(1))
    assert read(db, orders.get, locked).updated_at == plus(1)

    # The caller merges: the metadata given is the order's.
    assert write(db, singular.on(orders).complete, done, plus(2),
                 {'a': 1, 'b': 9, 'c': [3]})
    order = read(db, orders.get, done)
    assert (order.status, order.meta, order.updated_at) == (
        models.ACTIVE, {'a': 1, 'b': 9, 'c': [3]}, plus(2))
    assert write(db, orders.fail, failed, plus(2), 'broken')
    order = read(db, orders.get, failed)
    assert (order.status, order.error_reason) == (models.ERROR, 'broken')

    # A finished order takes no further move.
    for order_id in (done, failed):
        assert not write(db, singular.on(orders).complete, order_id, plus(3),
                         {})
        assert not write(db, orders.fail, order_id, plus(3), 'late')
        assert not write(db, db.queries.orders.cancel, order_id, plus(3),
                         'late', False)
        assert not write(db, orders.end_cancel, order_id, plus(3))
        assert not write(db, orders.lock_live, order_id, plus(3))
    assert not write(db, singular.on(orders).complete, 'missing', plus(3), {})
    assert not write(db, orders.fail, 'missing', plus(3), 'late')
    assert read(db, orders.get, done).status == models.ACTIVE
    assert read(db, orders.get, failed).updated_at == plus(2)


@sql_contract
def test_cancel_and_end_cancel(db):
    orders = db.repositories.orders
    at_once, compensated, failing = (new_order(db) for _ in range(3))

    assert write(db, db.queries.orders.cancel, at_once, plus(1), 'operator',
                 False)
    assert not write(db, db.queries.orders.cancel, at_once, plus(2), 'again',
                     False)
    assert not write(db, db.queries.orders.cancel, 'missing', plus(2), 'again',
                     True)
    order = read(db, orders.get, at_once)
    assert (order.status, order.error_reason, order.updated_at) == (
        models.CANCELLED, 'operator', plus(1))
    assert not write(db, orders.end_cancel, at_once, plus(2))

    assert write(db, db.queries.orders.cancel, compensated, plus(1),
                 'operator', True)
    assert read(db, orders.get, compensated).status == models.CANCELLING
    # Live until its compensation ends, but not for the workflow.
    assert write(db, orders.lock_live, compensated, plus(2))
    assert not write(db, singular.on(orders).complete, compensated, plus(2),
                     {})
    assert not write(db, orders.fail, compensated, plus(2), 'no')
    assert write(db, orders.end_cancel, compensated, plus(3))
    order = read(db, orders.get, compensated)
    assert (order.status, order.error_reason, order.updated_at) == (
        models.CANCELLED, 'operator', plus(3))

    assert write(db, db.queries.orders.cancel, failing, plus(1), 'operator',
                 True)
    assert write(db, orders.end_cancel, failing, plus(2),
                 failure='compensation revoke failed')
    assert not write(db, orders.end_cancel, failing, plus(3), failure='x')
    order = read(db, orders.get, failing)
    assert (order.status, order.error_reason) == (
        models.CANCELLED, 'operator; compensation revoke failed')
    assert read(db, db.queries.orders.count_unfinished_by_type) == {}


@contract
def test_retry_origins_read_priorities_and_request_ids(db):
    repos = db.repositories
    with_ids = write(db, repos.orders.create, order_types.get('certificate'),
                     {}, plus(1), priority=3, origin=orders.Origin(
                         request_id='req-a', global_request_id='req-g'))
    without = new_order(db, at=plus(2))

    assert read(db, repos.orders.retry_origins,
                {with_ids.id, without, 'missing'}) == {
        with_ids.id: orders.RetryOrigin(3, 'req-a', 'req-g'),
        without: orders.RetryOrigin(0, None, None)}
    assert read(db, repos.orders.retry_origins, set()) == {}


@contract
def test_an_order_keeps_its_origin_and_is_found_by_its_key(db):
    repos = db.repositories
    origin = orders.Origin(project_id='p1', idempotency_key='k',
                           request_hash='h' * 64, request_id='req-a',
                           global_request_id='req-g')
    created = write(db, repos.orders.create, order_types.get('certificate'),
                    {}, plus(1), origin=origin)
    legacy = new_order(db, at=plus(2))

    found = read(db, repos.orders.find_by_key, 'p1', 'k')
    assert found.id == created.id
    assert (found.project_id, found.idempotency_key, found.request_hash,
            found.request_id, found.global_request_id) == (
        'p1', 'k', 'h' * 64, 'req-a', 'req-g')
    assert read(db, repos.orders.find_by_key, 'p2', 'k') is None
    assert read(db, repos.orders.get, legacy).project_id == \
        models.DEFAULT_PROJECT
    assert read(db, repos.orders.status_of, legacy) == models.PENDING
    assert read(db, repos.orders.status_of, 'missing') is None


@sql_contract
def test_a_second_order_with_a_key_of_its_project_is_refused(db):
    repos = db.repositories
    workflow = order_types.get('certificate')
    origin = orders.Origin(project_id='p1', idempotency_key='k')
    write(db, repos.orders.create, workflow, {}, plus(1), origin=origin)
    with pytest.raises(db_exception.DBDuplicateEntry):
        write(db, repos.orders.create, workflow, {}, plus(2), origin=origin)
    # No key (twice: NULL keys never collide), or the key in another
    # project: no collision.
    no_key = orders.Origin(project_id='p1')
    elsewhere = orders.Origin(project_id='p2', idempotency_key='k')
    for other in (no_key, no_key, elsewhere):
        write(db, repos.orders.create, workflow, {}, plus(3), origin=other)
    assert sum(read(db, db.queries.orders.count_by_status).values()) == 4


@sql_contract
def test_orders_are_listed_by_project_and_type_a_page_at_a_time(db):
    repos = db.repositories
    mine = orders.Origin(project_id='mine')
    certificate = order_types.get('certificate')
    ids = [write(db, repos.orders.create, certificate, {}, plus(second),
                 origin=mine).id for second in (1, 1, 2)]
    write(db, repos.orders.create, order_types.get('fanout'), {}, plus(1),
          origin=mine)
    new_order(db, at=plus(0))
    # Orders created at the same moment come by id.
    expected = sorted(ids[:2]) + ids[2:]

    listed = read(db, db.queries.orders.list_orders, project_id='mine',
                  order_type='certificate')
    assert [order.id for order in listed] == expected
    first = read(db, db.queries.orders.list_orders, limit=2, project_id='mine',
                 order_type='certificate')
    rest = read(db, db.queries.orders.list_orders, project_id='mine',
                order_type='certificate',
                after=(first[-1].created_at, first[-1].id))
    assert [order.id for order in first + rest] == expected
    assert len(read(db, db.queries.orders.list_orders)) == 5


@sql_contract
def test_a_listing_without_meta_lists_the_same_orders(db):
    repos = db.repositories
    ids = [write(db, repos.orders.create, order_types.get('fanout'),
                 {'polls': n}, plus(n)).id for n in range(3)]

    listed = read(db, db.queries.orders.list_orders, limit=2, with_meta=False)

    assert [order.id for order in listed] == ids[:2]
    assert [order.type for order in listed] == ['fanout', 'fanout']


@sql_contract
def test_orders_are_found_by_a_prefix_of_their_id(db):
    repos = db.repositories
    order = write(db, repos.orders.create, order_types.get('certificate'),
                  {}, plus(1), origin=orders.Origin(project_id='p1'))
    assert read(db, db.queries.orders.ids_starting_with, order.id[:6]) == [
        order.id]
    assert read(db, db.queries.orders.ids_starting_with, order.id[:6],
                project_id='p2') == []
    # LIKE's wildcards are plain characters in a prefix.
    assert read(db, db.queries.orders.ids_starting_with, '%') == []
    assert read(db, db.queries.orders.ids_starting_with, '_') == []
    assert len(read(db, db.queries.orders.ids_starting_with, '', limit=5)) == 1


@sql_contract
def test_resume_moves_an_error_order_back_to_pending_once(db):
    orders = db.repositories.orders
    failed, active = new_order(db), new_order(db)
    assert write(db, orders.fail, failed, plus(1), 'broken')
    assert write(db, singular.on(orders).complete, active, plus(1), {})

    assert write(db, db.queries.orders.resume, failed, plus(2))
    order = read(db, orders.get, failed)
    assert (order.status, order.error_reason, order.updated_at) == (
        models.PENDING, None, plus(2))
    # Only from ERROR: a second resume, or one of another status, moves
    # nothing.
    assert not write(db, db.queries.orders.resume, failed, plus(3))
    assert not write(db, db.queries.orders.resume, active, plus(3))
    assert not write(db, db.queries.orders.resume, 'missing', plus(3))
    assert read(db, orders.get, failed).updated_at == plus(2)
    # Failed again, resumed again.
    assert write(db, orders.fail, failed, plus(4), 'again')
    assert write(db, db.queries.orders.resume, failed, plus(5))


def _failed(db, seconds):
    """An order whose step failed, and so the order, at ``plus(seconds)``,
    as a worker's result fails them."""
    repos = db.repositories
    order_id = claimed_order(db, 'w@h', at=plus(seconds))
    assert write(db, singular.on(repos.steps).finish, order_id, REQUEST, 1,
                 plus(seconds), models.STEP_FAILED, last_error='no')
    assert write(db, repos.orders.fail, order_id, plus(seconds), 'no')
    return order_id


@sql_contract
def test_ids_by_update_since_takes_the_failure_not_a_later_delivery(db):
    orders = db.repositories.orders
    early, late = _failed(db, 1), _failed(db, 3)
    # The delivery of early's events holds its row, after it failed.
    write(db, singular.on(db.repositories.notifications).lock_order, early,
          plus(5))

    assert read(db, db.queries.orders.ids_by_update, models.ERROR, 10,
                since=plus(2)) == [late]
    assert read(db, db.queries.orders.ids_by_update, models.ERROR, 10,
                since=plus(1)) == [late, early]
    # Resumed and failed again: since its new failure.
    assert write(db, db.queries.orders.resume, early, plus(6))
    assert write(db, db.queries.steps.restart, early, [REQUEST], [],
                 plus(6))
    assert write(db, singular.on(db.repositories.steps).claim, early, REQUEST,
                 2, plus(7), 'w@h', plus(60))
    assert write(db, singular.on(db.repositories.steps).finish, early, REQUEST,
                 3, plus(7), models.STEP_FAILED, last_error='again')
    assert write(db, orders.fail, early, plus(7), 'again')
    assert read(db, db.queries.orders.ids_by_update, models.ERROR, 10,
                since=plus(4)) == [early]


@sql_contract
def test_ids_by_update_lists_an_error_range_first_failed_first(db):
    orders = db.repositories.orders
    created = [new_order(db) for _ in range(4)]
    fanout = new_order(db, type_name='fanout')
    for seconds, order_id in zip((4, 1, 3, 2), created):
        assert write(db, orders.fail, order_id, plus(seconds), 'x')
    assert write(db, orders.fail, fanout, plus(5), 'x')
    first, second, third, fourth = (created[1], created[3], created[2],
                                    created[0])

    assert read(db, db.queries.orders.ids_by_update, models.ERROR, 10) == [
        first, second, third, fourth, fanout]
    assert read(db, db.queries.orders.ids_by_update, models.ERROR,
                2) == [first, second]
    assert read(db, db.queries.orders.ids_by_update, models.ERROR, 10,
                since=plus(3)) == [third, fourth, fanout]
    assert read(db, db.queries.orders.ids_by_update, models.ERROR, 10,
                order_type='fanout') == [fanout]
    assert read(db, db.queries.orders.ids_by_update, models.ERROR, 10,
                project_id='another') == []
    assert read(db, db.queries.orders.ids_by_update, models.ERROR, 10,
                project_id=models.DEFAULT_PROJECT, order_type='certificate',
                since=plus(2)) == [second, third, fourth]
    assert read(db, db.queries.orders.ids_by_update, models.ACTIVE, 10) == []


@sql_contract
def test_the_consoles_filters_and_capped_count(db):
    repos = db.repositories
    keyed = orders.Origin(project_id='mine', idempotency_key='renew-1')
    certificate = order_types.get('certificate')
    first = write(db, repos.orders.create, certificate, {}, plus(1),
                  origin=keyed).id
    later = [write(db, repos.orders.create, certificate, {}, plus(second),
                   origin=orders.Origin(project_id='mine')).id
             for second in (5, 6, 7)]
    queries = db.queries.orders

    assert [o.id for o in read(db, queries.list_orders,
                               idempotency_key='renew-1')] == [first]
    assert [o.id for o in read(db, queries.list_orders, project_id='mine',
                               created_from=plus(5), created_to=plus(7))
            ] == later[:2]
    assert read(db, queries.count_orders, cap=100, project_id='mine') == 4
    assert read(db, queries.count_orders, cap=2, project_id='mine') == 2
    assert read(db, queries.count_orders, cap=100,
                created_from=plus(6)) == 2
    assert read(db, queries.count_by_status_and_type, 'mine') == {
        (models.PENDING, 'certificate'): 4}
    assert read(db, queries.times_since, plus(6)) == [plus(7), plus(6)]
