"""Search by metadata and bulk actions by filter: ``OrderAPI.list(meta=…)``
and ``OrderAPI.bulk`` on SQLite (the API's queries are SQL only) with a
recording RPC client."""

import datetime
import types

import pytest

from tests import config
from tests import singular
from worker import api
from worker.api import bulk
from worker.db import models
from worker import rpcapi


@pytest.fixture
def database(sqlite_database):
    return sqlite_database


NOW = datetime.datetime(2026, 11, 26, 12, 0, 0)
P1, P2 = 'p1', 'p2'


@pytest.fixture
def clock():
    """The time the API reads: moved by hand, a second per order."""
    return types.SimpleNamespace(now=NOW)


@pytest.fixture
def conf():
    return config.make_conf(**{
        'api_limits.bulk_batch_size': 2,
        'notifications.allowed_hosts': ['hooks.example.org'],
        'notifications.secret': 's'})


@pytest.fixture
def orders(database, client, clock, conf):
    return api.OrderAPI(database, conf, rpcapi.WorkerAPI(client),
                        now=lambda: clock.now)


def _ids(found):
    return sorted(order.id for order in found)


def _create(orders, clock, meta, project=P1, order_type='certificate'):
    clock.now += datetime.timedelta(seconds=1)
    return orders.create(order_type, meta, project_id=project)


def _fail(database, order_id, now):
    with database.session() as session, session.begin():
        database.repositories.orders.fail(session, order_id, now, 'broken')
        database.repositories.steps.revoke_open(session, order_id, now,
                                                'failed')


def test_list_by_meta_is_typed_equality_on_nested_paths(orders, clock):
    number = _create(orders, clock, {'n': 3, 'issuer': {'name': 'x'}})
    text = _create(orders, clock, {'n': '3', 'issuer': {'name': 'y'}})
    real = _create(orders, clock, {'n': 3.0, 'ca': 'acme'})
    listed = _create(orders, clock, {'n': [3], 'ca': None, 'flag': True})
    nested = _create(orders, clock, {'n': {'m': 3}, 'flag': False})

    def found(**meta):
        return _ids(orders.list(all_projects=True, meta=meta))

    assert found(n=3) == _ids([number, real])
    assert found(n='3') == [text.id]
    assert found(**{'issuer.name': 'x'}) == [number.id]
    assert found(**{'n.m': 3}) == [nested.id]
    assert found(ca=None) == [listed.id]
    assert found(flag=True) == [listed.id]
    assert found(flag=False) == [nested.id]
    assert found(ca='acme', n=3) == [real.id]
    assert found(ca='acme', n='3') == []
    assert found(missing='x') == []


def test_list_by_meta_stays_in_the_callers_project(orders, clock):
    mine = _create(orders, clock, {'ca': 'acme'}, project=P1)
    _create(orders, clock, {'ca': 'acme'}, project=P2)
    assert _ids(orders.list(project_id=P1, meta={'ca': 'acme'})) == [
        mine.id]


def test_list_by_meta_refuses_a_bad_filter(orders):
    with pytest.raises(api.InvalidRequest, match='each key'):
        orders.list(all_projects=True, meta={'a b': 1})


def _statuses(orders, found):
    return {order.id: orders.get(order.id, all_projects=True).status
            for order in found}


def test_bulk_cancel_cancels_the_matching_pending_orders_in_batches(
        orders, clock, client, database):
    acme = [_create(orders, clock, {'ca': 'acme'}) for _ in range(5)]
    other = _create(orders, clock, {'ca': 'other'})
    elsewhere = _create(orders, clock, {'ca': 'acme'}, project=P2)
    before = len(client.casts)
    done = orders.bulk('cancel', project_id=P1, meta={'ca': 'acme'})
    assert (done.matched, done.changed, done.failed) == (5, 5, {})
    assert set(_statuses(orders, acme).values()) == {api.CANCELLED}
    assert _statuses(orders, [other, elsewhere]) == {
        other.id: api.PENDING, elsewhere.id: api.PENDING}
    # As a single cancel: the reason is recorded, the retry rows gone.
    order = orders.get(acme[0].id, all_projects=True)
    assert order.error_reason == bulk.BULK_CANCEL_REASON
    with database.reader() as session:
        assert database.repositories.retry_tasks.list_tasks(
            session, order_id=acme[0].id) == []
    assert len(client.casts) == before
    again = orders.bulk('cancel', project_id=P1, meta={'ca': 'acme'})
    assert (again.matched, again.changed) == (0, 0)


def test_bulk_cancel_revokes_the_steps_and_casts_each_compensation(
        orders, clock, client, database):
    made = [_create(orders, clock, {}, order_type='fanout')
            for _ in range(3)]
    with database.reader() as session:
        before = {order.id: database.repositories.steps.for_order(
            session, order.id) for order in made}
    cast = len(client.casts)
    done = orders.bulk('cancel', all_projects=True, order_type='fanout')
    assert done.changed == 3
    assert set(_statuses(orders, made).values()) == {api.CANCELLING}
    assert sorted((name, kwargs['order_id'])
                  for name, kwargs in client.casts[cast:]) == [
        ('revoke', order_id) for order_id in _ids(made)]
    with database.reader() as session:
        for order in made:
            steps = database.repositories.steps.for_order(session, order.id)
            for name, step in before[order.id].items():
                if step.status in (models.STEP_WAITING, models.STEP_PENDING):
                    assert steps[name].status == models.STEP_CANCELLED
                    assert steps[name].generation == step.generation + 1
            assert steps['revoke'].status == models.STEP_PENDING


def test_bulk_cancel_records_the_events_a_single_cancel_records(
        orders, clock, database):
    made = [orders.create('certificate', {'ca': ca}, project_id=P1,
                          callback_urls=['https://hooks.example.org/'])
            for ca in ('single', 'acme', 'acme')]
    orders.cancel(made[0].id, all_projects=True, reason='r')
    orders.bulk('cancel', all_projects=True, meta={'ca': 'acme'},
                reason='r')
    with database.reader() as session:
        found = database.repositories.notifications.events_after_many(
            session, {order.id: 0 for order in made}, 10)
    kinds = {order_id: [(event.event, event.status) for event in events]
             for order_id, events in found.items()}
    assert kinds[made[0].id][-1][1] == models.CANCELLED
    assert kinds[made[1].id] == kinds[made[2].id] == kinds[made[0].id]


def test_bulk_dry_run_counts_and_changes_nothing(orders, clock):
    made = [_create(orders, clock, {'ca': 'acme'}) for _ in range(3)]
    done = orders.bulk('cancel', all_projects=True, dry_run=True, limit=2)
    assert (done.dry_run, done.matched, done.changed, done.limit) == (
        True, 3, 2, 2)
    assert set(_statuses(orders, made).values()) == {api.PENDING}


def test_bulk_stops_at_its_limit(orders, clock):
    made = [_create(orders, clock, {}) for _ in range(5)]
    done = orders.bulk('cancel', all_projects=True, limit=3)
    assert (done.matched, done.changed) == (5, 3)
    assert sorted(_statuses(orders, made).values()).count(
        api.CANCELLED) == 3


def test_bulk_selects_by_type_and_creation_range(orders, clock):
    first = _create(orders, clock, {})
    middle = _create(orders, clock, {}, order_type='fanout')
    last = _create(orders, clock, {})
    done = orders.bulk('cancel', all_projects=True, order_type='certificate',
                       since=first.created_at + datetime.timedelta(
                           microseconds=1))
    assert done.changed == 1
    assert _statuses(orders, [first, middle, last]) == {
        first.id: api.PENDING, middle.id: api.PENDING,
        last.id: api.CANCELLED}
    done = orders.bulk('cancel', all_projects=True, until=middle.created_at)
    assert done.changed == 1
    assert orders.get(first.id, all_projects=True).status == api.CANCELLED


def test_bulk_resume_resumes_error_orders_and_casts_their_steps(
        orders, clock, client, database):
    made = [_create(orders, clock, {'ca': 'acme'}) for _ in range(3)]
    for order in made:
        _fail(database, order.id, clock.now)
    before = len(client.casts)
    done = orders.bulk('resume', all_projects=True, meta={'ca': 'acme'})
    assert (done.matched, done.changed, done.failed) == (3, 3, {})
    assert set(_statuses(orders, made).values()) == {api.PENDING}
    cast = [kwargs for _, kwargs in client.casts[before:]]
    assert sorted(step['order_id'] for step in cast) == _ids(made)


def test_bulk_reprioritize_moves_the_orders_and_their_retry_rows(
        orders, clock, database):
    made = _create(orders, clock, {'ca': 'acme'})
    untouched = _create(orders, clock, {'ca': 'other'})
    with database.session() as session, session.begin():
        singular.add_retry(database.repositories.retry_tasks, session,
                           made.id, 'process_type_order', clock.now,
                           args=[], kwargs={}, retry_count=0, priority=0)
    done = orders.bulk('reprioritize', all_projects=True,
                       meta={'ca': 'acme'}, priority=7)
    assert (done.matched, done.changed) == (1, 1)
    assert orders.get(made.id, all_projects=True).priority == 7
    assert orders.get(untouched.id, all_projects=True).priority == 0
    with database.reader() as session:
        rows = database.repositories.retry_tasks.list_tasks(
            session, order_id=made.id)
    assert [row.priority for row in rows] == [7]


def test_bulk_pause_pauses_each_matching_order_once(orders, clock):
    made = [_create(orders, clock, {'ca': 'acme'}) for _ in range(3)]
    untouched = _create(orders, clock, {'ca': 'other'})
    done = orders.bulk('pause', all_projects=True, meta={'ca': 'acme'})
    assert (done.matched, done.changed) == (3, 3)
    paused = orders.pauses(target='order')
    assert sorted(pause.name for pause in paused) == _ids(made)
    assert {pause.reason for pause in paused} == {'paused in bulk'}
    assert orders.get(made[0].id, all_projects=True).paused_by
    assert not orders.get(untouched.id, all_projects=True).paused_by
    # Paused already: matched, not changed.
    again = orders.bulk('pause', all_projects=True, meta={'ca': 'acme'})
    assert (again.matched, again.changed) == (3, 0)


@pytest.mark.parametrize('action,arguments,message', [
    ('pause', {'reason': 'x' * 256}, 'reason'),
    ('delete', {}, 'no bulk action'),
    ('cancel', {'status': api.ERROR}, 'applies to PENDING orders'),
    ('resume', {'status': api.PENDING}, 'applies to ERROR orders'),
    ('reprioritize', {}, 'needs the new priority'),
    ('reprioritize', {'priority': 99}, 'priority must be'),
    ('cancel', {'priority': 3}, 'goes with reprioritize only'),
    ('cancel', {'meta': {'a': [1]}}, 'compares a string'),
])
def test_bulk_refuses_what_it_cannot_do(orders, action, arguments, message):
    with pytest.raises(api.InvalidRequest, match=message):
        orders.bulk(action, all_projects=True, **arguments)


def test_bulk_limit_is_bounded_by_the_configured_maximum(orders, conf):
    conf.set_override('max_bulk_orders', 10, group='api_limits')
    with pytest.raises(api.OutOfBounds):
        orders.bulk('cancel', all_projects=True, limit=11)
    assert orders.bulk('cancel', all_projects=True,
                       dry_run=True).limit == 10


def test_bulk_needs_a_scope(orders):
    with pytest.raises(api.InvalidProjectScope):
        orders.bulk('cancel')


def test_the_statuses_of_reprioritize_are_those_that_still_run():
    assert set(bulk.REPRIORITIZED_STATUSES) == {
        models.PENDING, models.CANCELLING}


def test_an_action_is_one_function_over_each_batch(orders, clock,
                                                   monkeypatch):
    made = [_create(orders, clock, {'ca': 'acme'}) for _ in range(5)]
    seen = []

    def touch(tools, batch, options, now):
        assert tools.api is orders
        seen.append([order.id for order in batch])
        return bulk.Batch([order.id for order in batch], {})

    monkeypatch.setitem(bulk.ACTIONS, 'pause',
                        bulk.Action((api.PENDING,), touch))
    done = orders.bulk('pause', all_projects=True, meta={'ca': 'acme'})
    # Batches of 2 (the fixture's bulk_batch_size), by id.
    assert [len(batch) for batch in seen] == [2, 2, 1]
    assert sum(seen, []) == _ids(made)
    assert (done.matched, done.changed) == (5, 5)
