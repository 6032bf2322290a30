"""A URL with a secret of its own belongs to a project (or is global).

Another project's order naming it is refused, however the URL is
written; and a delivery of an order that named it before it was owned
sends nothing once another project owns it.
"""

import datetime

import pytest

from tests.unit.worker.notifications import test_deliveries as deliveries
from worker import api
from worker.notifications import subscriptions
from worker import rpcapi

NOW = datetime.datetime(2026, 11, 28, 12, 0, 0)
HOOK = 'https://hooks.example.org/orders'
SECRET = 'whsec_' + 'C' * 44


@pytest.fixture
def orders(database, client, conf):
    return api.OrderAPI(database, conf, rpcapi.WorkerAPI(client),
                        now=lambda: NOW)


def _own(database, url, project_id):
    """``notification url set-secret URL --project``, as the command
    writes it."""
    [url_id] = subscriptions.url_ids(database, [url], NOW)
    store = database.repositories.notifications
    with database.session() as session, session.begin():
        store.set_secret(session, url_id, SECRET, None, NOW)
        store.set_owner(session, url_id, project_id, NOW)
    return url_id


@pytest.mark.parametrize('named', [
    HOOK,
    # One receiver, one key: spellings of the URL are the URL.
    HOOK + '#',
    'HTTPS://Hooks.Example.ORG.:443/orders',
])
def test_another_project_s_order_naming_an_owned_url_is_refused(
        orders, database, named):
    _own(database, HOOK, 'tenant-a')
    with pytest.raises(api.URLNotAllowed,
                       match='belongs to another project') as refused:
        orders.create('certificate', {}, project_id='tenant-b',
                      callback_urls=[named])
    assert HOOK in str(refused.value) or named in str(refused.value)
    # Its own project's orders may.
    order = orders.create('certificate', {}, project_id='tenant-a',
                          callback_urls=[named])
    assert 'notify:1' in [step.name for step in order.steps]


def test_a_global_url_and_an_unowned_one_are_anyone_s(orders, database):
    _own(database, HOOK, None)
    other = 'https://hooks.example.org/other'
    for project in ('tenant-a', 'tenant-b'):
        orders.create('certificate', {}, project_id=project,
                      callback_urls=[HOOK, other])


def test_a_delivery_to_a_url_another_project_took_sends_nothing(database):
    sender = deliveries.ScriptedSender()
    worker = deliveries.Worker(database, sender)
    # The order (of deliveries.PROJECT) named the URL before it was owned.
    order_id = deliveries._order(database)
    _own(database, deliveries.URL, 'someone-else')

    worker.run(deliveries.DELIVERY, order_id, 0)

    assert sender.sent == []
    step = deliveries._step(database, order_id, deliveries.DELIVERY)
    assert step.status == deliveries.models.STEP_WAITING
    assert 'belongs to another project' in step.last_error
    # The URL is available: still no reason to go on.
    assert worker.client.casts == []


def test_an_endpoint_with_an_owner_still_gets_every_project_s_events(
        database, client, conf):
    """``[notifications] endpoints`` receive every order's events: an
    owner given to one (``set-owner``, or inferred by migration 0011)
    neither refuses another project's order naming it nor pauses its
    delivery."""
    conf.set_override('endpoints', [HOOK], 'notifications')
    _own(database, HOOK, 'tenant-a')
    orders = api.OrderAPI(database, conf, rpcapi.WorkerAPI(client),
                          now=lambda: NOW)
    order = orders.create('certificate', {}, project_id='tenant-b',
                          callback_urls=[HOOK])
    assert 'notify:1' in [step.name for step in order.steps]


def test_a_delivery_to_an_endpoint_another_project_owns_is_sent(database):
    sender = deliveries.ScriptedSender()
    worker = deliveries.Worker(database, sender, **{
        'notifications.endpoints': [deliveries.URL]})
    order_id = deliveries._order(database)
    _own(database, deliveries.URL, 'someone-else')

    worker.run(deliveries.DELIVERY, order_id, 0)

    assert sender.sequences() == [1]
    step = deliveries._step(database, order_id, deliveries.DELIVERY)
    assert step.status == deliveries.models.STEP_DONE
