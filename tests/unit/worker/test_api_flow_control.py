"""``worker.api.OrderAPI`` admission (``[order_type:T] max_pending``)
and orders that start later (``not_before``), on the in-memory database
with a recording RPC client."""

import datetime

import pytest

from tests import config
from worker import api
from worker.api import admission
from worker.db import models
from worker import manager
from worker.notifications import subscriptions
from worker.order_types import certificate
from worker.plugins import base as plugin_base
from worker import rpcapi


@pytest.fixture
def database(sqlite_database):
    """SQLite, not the fake: the API's queries (``worker.db.queries``)
    are SQL only."""
    return sqlite_database


NOW = datetime.datetime(2026, 11, 26, 12, 0, 0)
PROJECT = 'p'
LATER = NOW + datetime.timedelta(hours=2)


def _api(database, client, conf, now=NOW):
    return api.OrderAPI(database, conf, rpcapi.WorkerAPI(client),
                        now=lambda: now)


@pytest.fixture
def bounded():
    """``certificate`` with a ``max_pending`` of 2; callback URLs to
    hooks.example.org allowed."""
    return config.make_conf(**{
        'order_type:certificate.max_pending': 2,
        'notifications.allowed_hosts': ['hooks.example.org'],
        'notifications.secret': 's'})


def _rows(database):
    """How many rows of each kind a create writes."""
    with database.reader() as session:
        repositories = database.repositories
        return (sum(repositories.orders.count_by_status(session).values()),
                len(repositories.retry_tasks.list_tasks(session)),
                len(repositories.notifications.list_urls(session)))


def test_max_pending_refuses_the_order_past_the_bound_and_writes_nothing(
        database, client, bounded):
    orders = _api(database, client, bounded)
    first = orders.create('certificate', {}, project_id=PROJECT)
    orders.create('certificate', {}, project_id=PROJECT)
    casts = len(client.casts)
    written = _rows(database)

    with pytest.raises(api.TooManyPendingOrders) as refused:
        orders.create('certificate', {}, project_id=PROJECT,
                      callback_urls=['https://hooks.example.org/new'])

    assert isinstance(refused.value, api.OrderAPIError)
    assert (refused.value.order_type, refused.value.max_pending,
            refused.value.pending) == ('certificate', 2, 2)
    assert 'max_pending' in str(refused.value)
    assert _rows(database) == written
    assert len(client.casts) == casts
    # Another type has no bound.
    orders.create('fanout', {}, project_id=PROJECT)
    # An order that ends makes room.
    with database.session() as session, session.begin():
        database.repositories.orders.fail(session, first.id, NOW, 'broken')
    orders.create('certificate', {}, project_id=PROJECT)


def test_create_many_is_admitted_whole_or_not_at_all(database, client,
                                                     bounded):
    orders = _api(database, client, bounded)
    orders.create('certificate', {}, project_id=PROJECT)
    with pytest.raises(api.TooManyPendingOrders) as refused:
        orders.create_many('certificate', {}, 2, project_id=PROJECT)
    assert refused.value.pending == 1
    assert 'the 2 new orders are refused' in str(refused.value)
    assert _rows(database)[0] == 1
    assert len(orders.create_many('certificate', {}, 1,
                                  project_id=PROJECT)) == 1


def test_a_retried_request_with_its_key_is_never_refused(database, client,
                                                         bounded):
    orders = _api(database, client, bounded)
    first = orders.create('certificate', {}, project_id=PROJECT,
                          idempotency_key='k')
    orders.create('certificate', {}, project_id=PROJECT)
    again = orders.create('certificate', {}, project_id=PROJECT,
                          idempotency_key='k')
    assert again.id == first.id


def test_a_concurrent_request_with_the_key_that_took_the_last_place(
        database, client, bounded, monkeypatch):
    # The key's order was not there when we looked, and took the last
    # place before our transaction: it is ours.
    orders = _api(database, client, bounded)
    orders.create('certificate', {}, project_id=PROJECT)
    real = subscriptions.url_ids

    def racing(*args):
        # Theirs commits between our read of the key and our transaction.
        monkeypatch.setattr(subscriptions, 'url_ids', real)
        theirs.append(orders.create('certificate', {}, project_id=PROJECT,
                                    idempotency_key='k'))
        return real(*args)

    theirs = []
    monkeypatch.setattr(subscriptions, 'url_ids', racing)
    ours = orders.create('certificate', {}, project_id=PROJECT,
                         idempotency_key='k')
    assert ours.id == theirs[0].id


def test_an_order_that_starts_later_waits_in_the_retry_table(
        database, client, conf):
    orders = _api(database, client, conf)
    order = orders.create('fanout', {}, project_id=PROJECT, priority=4,
                          not_before=LATER)

    assert (order.status, order.not_before) == (api.PENDING, LATER)
    assert client.casts == []
    first = {'check_domains', 'check_caa', 'check_key'}
    assert {step.name: (step.status, step.next_retry_at)
            for step in order.steps if step.name in first} == {
        name: ('RETRYING', LATER) for name in first}
    assert orders.get(order.id, all_projects=True) == order
    with database.reader() as session:
        tasks = database.repositories.retry_tasks.list_tasks(session)
        steps = database.repositories.steps.for_order(session, order.id)
    assert {(task.retry_task, task.retry_at, task.priority,
             task.retry_count) for task in tasks} == {
        (name, LATER, 4, 0) for name in first}
    # What the retry daemon casts: generation 0, the order's request ids.
    parsed = rpcapi.WorkerAPI(client).parse_retry(
        tasks[0].retry_task, tasks[0].retry_args, tasks[0].retry_kwargs)
    assert (parsed.order_id, parsed.generation,
            parsed.request.request_id) == (order.id, 0, order.request_id)
    # Never taken for a lost dispatch: not dispatched.
    assert {steps[name].dispatched_at for name in first} == {None}


def test_an_order_that_starts_later_notifies_its_creation_at_once(
        database, client, conf):
    orders = _api(database, client, conf)
    order = orders.create('certificate', {}, project_id=PROJECT,
                          not_before=LATER,
                          callback_urls=['https://hooks.example.org/a'])
    assert [name for name, _ in client.casts] == ['notify:1']
    assert [(step.name, step.status) for step in order.steps] == [
        ('process_type_order', 'RETRYING'),
        ('check_certificate_status', 'WAITING'), ('notify:1', 'QUEUED')]


@pytest.mark.parametrize('moment', [
    NOW, NOW - datetime.timedelta(days=1),
    (NOW - datetime.timedelta(seconds=1)).replace(
        tzinfo=datetime.timezone.utc)])
def test_a_start_now_or_past_starts_at_once(database, client, conf, moment):
    order = _api(database, client, conf).create(
        'certificate', {}, project_id=PROJECT, not_before=moment)
    assert order.not_before is None
    assert [name for name, _ in client.casts] == ['process_type_order']


def test_an_aware_start_is_converted_and_a_naive_one_is_utc(
        database, client, conf):
    orders = _api(database, client, conf)
    plus_one = datetime.timezone(datetime.timedelta(hours=1))
    aware = orders.create('certificate', {}, project_id=PROJECT,
                          not_before=datetime.datetime(2026, 11, 26, 15,
                                                       tzinfo=plus_one))
    naive = orders.create('certificate', {}, project_id=PROJECT,
                          not_before=datetime.datetime(2026, 11, 26, 14))
    assert aware.not_before == naive.not_before == datetime.datetime(
        2026, 11, 26, 14)


@pytest.mark.parametrize('moment, words', [
    (NOW + datetime.timedelta(days=3654), 'at most 3653 days ahead'),
    ('2026-12-01T09:00:00Z', 'not_before must be a datetime'),
    (datetime.date(2026, 12, 1), 'not_before must be a datetime')])
def test_a_start_that_cannot_be_right_is_refused(database, client, conf,
                                                 moment, words):
    with pytest.raises(api.InvalidRequest, match=words):
        _api(database, client, conf).create(
            'certificate', {}, project_id=PROJECT, not_before=moment)
    assert _rows(database)[0] == 0


def test_the_start_is_part_of_the_request_a_key_names(database, client,
                                                      conf):
    orders = _api(database, client, conf)
    first = orders.create('certificate', {}, project_id=PROJECT,
                          idempotency_key='k', not_before=LATER)
    assert orders.create('certificate', {}, project_id=PROJECT,
                         idempotency_key='k', not_before=LATER).id == \
        first.id
    with pytest.raises(api.IdempotencyConflict):
        orders.create('certificate', {}, project_id=PROJECT,
                      idempotency_key='k')


def test_orders_that_start_later_count_as_pending(database, client,
                                                  bounded):
    orders = _api(database, client, bounded)
    orders.create_many('certificate', {}, 2, project_id=PROJECT,
                       not_before=LATER)
    with pytest.raises(api.TooManyPendingOrders):
        orders.create('certificate', {}, project_id=PROJECT)
    with database.reader() as session:
        assert database.repositories.orders.count_pending(
            session, 'certificate') == 2
        assert database.repositories.locks.get(
            session, admission.lock_entity('certificate')) is not None


def test_a_type_without_a_bound_takes_no_lock(database, client, conf):
    _api(database, client, conf).create('certificate', {},
                                        project_id=PROJECT)
    with database.reader() as session:
        assert database.repositories.locks.get(
            session, admission.lock_entity('certificate')) is None


def test_an_order_cancelled_before_its_time_never_starts(database, client,
                                                         conf):
    orders = _api(database, client, conf)
    order = orders.create('certificate', {}, project_id=PROJECT,
                          not_before=LATER)
    cancelled = orders.cancel(order.id, all_projects=True)
    assert cancelled.status == api.CANCELLED
    assert [step.status for step in cancelled.steps] == [
        models.STEP_CANCELLED, models.STEP_CANCELLED]
    assert _rows(database)[1] == 0
    assert client.casts == []


class _Completes(plugin_base.CertificatePluginBase):
    """A plugin whose every step completes."""

    def issue_certificate_request(self, order):
        return plugin_base.Completed()

    check_certificate_status = issue_certificate_request


@pytest.mark.parametrize('not_before, status', [
    (LATER, models.PENDING), (None, models.ERROR)])
def test_the_order_deadline_counts_from_its_start(
        database, client, monkeypatch, not_before, status):
    # A deadline of a minute, the first step run ten seconds after LATER:
    # in time for an order that started at LATER, late for one created
    # at NOW.
    monkeypatch.setattr(certificate.CertificateOrder, 'build',
                        classmethod(lambda cls, conf: cls(_Completes())))
    conf = config.make_conf(**{'order_type:certificate.deadline_seconds':
                               60.0})
    order = _api(database, client, conf).create(
        'certificate', {}, project_id=PROJECT, not_before=not_before)
    worker = manager.WorkerManager(
        conf, database, 'w@h', worker_api=rpcapi.WorkerAPI(client),
        clock=lambda: LATER + datetime.timedelta(seconds=10))

    worker.run_steps({}, [['process_type_order', order.id, 0]])

    assert _api(database, client, conf).get(
        order.id, project_id=PROJECT).status == status
