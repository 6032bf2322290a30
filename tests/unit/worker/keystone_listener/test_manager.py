"""``worker.keystone_listener.manager.ProjectCleanup`` over the real
``worker.api`` on the in-memory database: what a deleted project keeps
and loses."""

import datetime

import pytest

from tests import singular
from worker import api
from worker.keystone_listener import manager
from worker import rpcapi
from worker import schedule_api

NOW = datetime.datetime(2026, 11, 28, 12, 0, 0)
GONE = 'c0ffee0000000000000000000000dead'
KEPT = 'c0ffee0000000000000000000000beef'
META = {}


@pytest.fixture
def database(sqlite_database):
    """The listener lists and cancels through the API's queries, which
    only SQL serves."""
    return sqlite_database


@pytest.fixture
def orders(database, client, conf):
    return api.OrderAPI(database, conf, rpcapi.WorkerAPI(client),
                        now=lambda: NOW)


@pytest.fixture
def schedules(database, conf, orders):
    return schedule_api.ScheduleAPI(database, conf, orders=orders)


@pytest.fixture
def cleanup(orders, schedules):
    return manager.ProjectCleanup(orders, schedules)


def _end(database, order_id, status):
    with database.session() as session, session.begin():
        if status == api.ERROR:
            database.repositories.orders.fail(session, order_id, NOW,
                                              'broken')
        else:
            singular.complete(database.repositories.orders, session,
                              order_id, NOW, None)


def _statuses(orders, project_id):
    return sorted(order.status for order in
                  orders.list(project_id=project_id, limit=1000))


def test_the_pending_orders_of_the_project_are_cancelled_with_a_reason(
        cleanup, orders):
    made = [orders.create('certificate', META, project_id=GONE)
            for _ in range(3)]
    done = cleanup.project_deleted(GONE)
    assert done == manager.Cleanup(GONE, 3, 0)
    for order in made:
        cancelled = orders.get(order.id, project_id=GONE)
        assert cancelled.status == api.CANCELLED
        assert GONE in cancelled.error_reason
        assert 'deleted in Keystone' in cancelled.error_reason


def test_other_projects_keep_their_orders_and_schedules(
        cleanup, orders, schedules):
    kept = orders.create('certificate', META, project_id=KEPT)
    schedule = schedules.create('certificate', META, project_id=KEPT,
                                every='1h')
    orders.create('certificate', META, project_id=GONE)
    cleanup.project_deleted(GONE)
    assert orders.get(kept.id, project_id=KEPT).status == api.PENDING
    assert schedules.get(schedule.id, project_id=KEPT) == schedule


def test_the_schedules_of_the_project_are_deleted(cleanup, schedules):
    for every in ('1h', '2h'):
        schedules.create('certificate', META, project_id=GONE, every=every)
    done = cleanup.project_deleted(GONE)
    assert done.schedules_deleted == 2
    assert schedules.list(project_id=GONE) == []


def test_finished_orders_are_left_to_the_retention(
        cleanup, orders, database):
    active = orders.create('certificate', META, project_id=GONE)
    failed = orders.create('certificate', META, project_id=GONE)
    _end(database, active.id, api.ACTIVE)
    _end(database, failed.id, api.ERROR)
    done = cleanup.project_deleted(GONE)
    assert done.orders_cancelled == 0
    assert orders.get(active.id, project_id=GONE).status == api.ACTIVE
    assert orders.get(failed.id, project_id=GONE).status == api.ERROR


def test_more_orders_than_a_page_are_all_cancelled(
        cleanup, orders, monkeypatch):
    monkeypatch.setattr(manager, 'PAGE_SIZE', 2)
    for _ in range(5):
        orders.create('certificate', META, project_id=GONE)
    assert cleanup.project_deleted(GONE).orders_cancelled == 5
    assert _statuses(orders, GONE) == [api.CANCELLED] * 5


def test_a_second_notification_of_the_same_project_changes_nothing(
        cleanup, orders, schedules):
    order = orders.create('certificate', META, project_id=GONE)
    schedules.create('certificate', META, project_id=GONE, every='1h')
    cleanup.project_deleted(GONE)
    before = orders.get(order.id, project_id=GONE)
    assert cleanup.project_deleted(GONE) == manager.Cleanup(GONE, 0, 0)
    assert orders.get(order.id, project_id=GONE) == before


def test_an_order_that_ended_meanwhile_is_skipped(cleanup, orders,
                                                  database, monkeypatch):
    first = orders.create('certificate', META, project_id=GONE)
    second = orders.create('certificate', META, project_id=GONE)
    cancel = orders.cancel

    def ended_first(order_id, **kwargs):
        # Another listener, or the order's own end, got there first.
        if order_id == first.id:
            _end(database, first.id, api.ACTIVE)
        return cancel(order_id, **kwargs)

    monkeypatch.setattr(orders, 'cancel', ended_first)
    assert cleanup.project_deleted(GONE).orders_cancelled == 1
    assert orders.get(first.id, project_id=GONE).status == api.ACTIVE
    assert orders.get(second.id, project_id=GONE).status == api.CANCELLED


def test_an_order_whose_cancel_keeps_failing_ends_the_loop(
        cleanup, orders, monkeypatch):
    orders.create('certificate', META, project_id=GONE)

    def refuse(order_id, **kwargs):
        raise api.OrderNotCancellable('no')

    monkeypatch.setattr(orders, 'cancel', refuse)
    assert cleanup.project_deleted(GONE).orders_cancelled == 0


def test_a_project_id_that_cannot_be_one_is_refused(cleanup):
    with pytest.raises(api.InvalidRequest):
        cleanup.project_deleted('x' * (api.MAX_PROJECT_ID_LENGTH + 1))
