"""``OrderAPI.signal`` on SQLite with a recording RPC client: stored once
per ``signal_id``, the waiting step woken (its retry row due now, and
cast), refused for another project's order, an order that ended, a name
its type does not wait for and a payload over the bounds."""

import datetime

import pytest

from worker import api
from worker.db import models
from worker.order_types import certificate
from worker import rpcapi

NOW = datetime.datetime(2026, 11, 28, 12, 0, 0)
REQUEST, CHECK = 'process_type_order', 'check_certificate_status'
ISSUED = certificate.ISSUED_SIGNAL


@pytest.fixture
def database(sqlite_database):
    """SQLite, not the fake: the API's queries are SQL only."""
    return sqlite_database


@pytest.fixture
def orders(database, client, conf):
    return api.OrderAPI(database, conf, rpcapi.WorkerAPI(client),
                        now=lambda: NOW)


def _waiting(database, orders, project='p1'):
    """A certificate order whose status check polls: its request DONE,
    the check PENDING at generation 1 with a retry row an hour away."""
    order = orders.create('certificate', {}, project_id=project)
    repositories = database.repositories
    with database.session() as session, session.begin():
        repositories.steps.start_many(session, [(order.id, [CHECK], False)],
                                      NOW)
        session.execute(models.OrderStep.__table__.update().where(
            models.OrderStep.order_id == order.id).values(
                status=models.STEP_DONE).where(
                    models.OrderStep.name == REQUEST))
        session.execute(models.OrderStep.__table__.update().where(
            models.OrderStep.order_id == order.id,
            models.OrderStep.name == CHECK).values(generation=1))
        repositories.retry_tasks.add_many(session, [dict(
            order_id=order.id, retry_task=CHECK,
            retry_at=NOW + datetime.timedelta(hours=1),
            args=[order.id], kwargs={'generation': 1}, now=NOW)])
    return order


def _retry_at(database, order_id):
    with database.reader() as session:
        [row] = database.repositories.retry_tasks.list_tasks(
            session, order_id=order_id)
    return row.retry_at


def test_a_signal_wakes_the_waiting_step_at_once(database, orders, client):
    order = _waiting(database, orders)
    client.casts.clear()

    sent = orders.signal(order.id, ISSUED, {'serial': 7}, signal_id='s1',
                         project_id='p1')

    assert (sent.order_id, sent.signal_id, sent.name, sent.payload,
            sent.repeated, sent.consumed_at) == (
                order.id, 's1', ISSUED, {'serial': 7}, False, None)
    assert _retry_at(database, order.id) == NOW
    assert [(name, kwargs) for name, kwargs in client.casts] == [
        (CHECK, {'order_id': order.id, 'generation': 1})]


def test_a_repeated_signal_id_is_stored_once_and_returns_the_first(
        database, orders, client):
    order = _waiting(database, orders)
    first = orders.signal(order.id, ISSUED, {'n': 1}, signal_id='s1',
                          project_id='p1')
    client.casts.clear()

    again = orders.signal(order.id, ISSUED, {'n': 2}, signal_id='s1',
                          project_id='p1')

    assert again.repeated and (again.payload, again.created_at) == (
        first.payload, first.created_at)
    assert client.casts == []
    with database.reader() as session:
        assert [row.signal_id for row in database.queries.signals.for_order(
            session, order.id)] == ['s1']


def test_without_a_signal_id_each_signal_gets_its_own(database, orders):
    order = _waiting(database, orders)
    one = orders.signal(order.id, ISSUED, project_id='p1')
    two = orders.signal(order.id, ISSUED, project_id='p1')
    assert one.signal_id != two.signal_id
    with database.reader() as session:
        assert [row.signal_id for row in database.queries.signals.for_order(
            session, order.id)] == [one.signal_id, two.signal_id]


def test_another_projects_order_is_not_found(database, orders):
    order = _waiting(database, orders)
    with pytest.raises(api.OrderNotFound):
        orders.signal(order.id, ISSUED, project_id='p2')


def test_an_order_that_ended_takes_no_signal_but_a_repeat_is_answered(
        database, orders):
    order = _waiting(database, orders)
    orders.signal(order.id, ISSUED, signal_id='s1', project_id='p1')
    orders.cancel(order.id, project_id='p1')

    with pytest.raises(api.OrderNotSignallable, match='is CANCELLED'):
        orders.signal(order.id, ISSUED, signal_id='s2', project_id='p1')
    assert orders.signal(order.id, ISSUED, signal_id='s1',
                         project_id='p1').repeated


@pytest.mark.parametrize('name, payload, signal_id, error', [
    ('certificate.revoked', None, None, 'waits for no signal'),
    ('Not.A.Name', None, None, 'not a signal name'),
    (ISSUED, {'x': 'y' * 70000}, None, 'payload must be'),
    (ISSUED, None, 'k' * 65, 'signal_id'),
    (ISSUED, None, '', 'signal_id must be a string of 1'),
])
def test_bad_signals_are_refused_before_anything_is_written(
        database, orders, client, name, payload, signal_id, error):
    order = _waiting(database, orders)
    client.casts.clear()
    with pytest.raises(api.InvalidRequest, match=error):
        orders.signal(order.id, name, payload, signal_id=signal_id,
                      project_id='p1')
    assert client.casts == []
    with database.reader() as session:
        assert database.queries.signals.for_order(session, order.id) == []
