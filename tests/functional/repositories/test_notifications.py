"""Notification URLs, events and deliveries (steps named ``notify:<url
id>``), on every backend."""

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
from tests.functional.repositories.shared import step_of
from tests.functional.repositories.shared import write
from tests import singular
from worker.db import models


HOOK = 'https://hooks.example.org/orders'


def _subscribed(db, *url_ids):
    """A certificate order with a delivery to each URL of ``url_ids``."""
    order_id = new_order(db)
    names = [models.delivery_name(url_id) for url_id in url_ids]
    write(db, db.repositories.steps.create, order_id, names, set(names),
          NOW)
    return order_id


@sql_contract
def test_notification_urls(db):
    store = db.repositories.notifications
    added = write(db, store.add_url, HOOK, NOW)
    other = write(db, store.add_url, HOOK + '/2', NOW)
    assert (added.url, added.available, added.failures) == (HOOK, True, 0)
    with pytest.raises(db_exc.DBDuplicateEntry):
        write(db, store.add_url, HOOK, NOW)
    assert read(db, store.find_url, HOOK).id == added.id
    assert read(db, store.find_url, HOOK + '/3') is None
    assert [url.id for url in read(db, store.list_urls)] == [
        added.id, other.id]

    write(db, store.url_failed, added.id, plus(1), 'HTTP 500', False)
    write(db, store.url_failed, added.id, plus(2), 'HTTP 502', True)
    write(db, store.url_failed, added.id, plus(3), 'HTTP 503', True)
    url = read(db, singular.on(store).get_url, added.id)
    assert (url.available, url.failures, url.last_error,
            url.last_failure_at, url.disabled_at, url.updated_at) == (
        False, 3, 'HTTP 503', plus(3), plus(2), plus(3))
    assert read(db, store.count_unavailable_urls) == 1
    assert not write(db, store.hold_url, added.id, plus(4))
    assert read(db, singular.on(store).get_url, added.id).updated_at == plus(4)

    write(db, db.queries.notifications.enable_url, added.id, plus(5))
    write(db, singular.on(store).url_succeeded, other.id)
    url = read(db, singular.on(store).get_url, added.id)
    assert (url.available, url.failures, url.disabled_at,
            url.updated_at) == (True, 0, None, plus(5))
    assert write(db, store.hold_url, added.id, plus(6))
    write(db, store.url_failed, added.id, plus(7), 'x', False)
    write(db, singular.on(store).url_succeeded, added.id)
    assert read(db, singular.on(store).get_url, added.id).failures == 0
    assert read(db, store.count_unavailable_urls) == 0


@contract
def test_a_url_s_secret_and_its_rotation(db):
    store = db.repositories.notifications
    url_id = write(db, store.add_url, HOOK, NOW).id
    other = write(db, store.add_url, HOOK + '/2', NOW).id

    def secrets(url=url_id):
        row = read(db, singular.on(store).get_url, url)
        return row.secret, row.previous_secret, row.previous_secret_until

    assert secrets() == (None, None, None)
    # The first, kept: the previous key is the global one (none here).
    write(db, store.set_secret, url_id, 'whsec_a', plus(60), plus(1))
    assert secrets() == ('whsec_a', None, plus(60))
    write(db, store.set_secret, url_id, 'whsec_b', plus(120), plus(2))
    assert secrets() == ('whsec_b', 'whsec_a', plus(120))
    assert read(db, singular.on(store).get_url, url_id).updated_at == plus(2)
    # During a rotation, another: the oldest stops.
    write(db, store.set_secret, url_id, 'whsec_c', plus(180), plus(3))
    assert secrets() == ('whsec_c', 'whsec_b', plus(180))
    # Without keeping the old one: only the new signs, at once.
    write(db, store.set_secret, url_id, 'whsec_d', None, plus(4))
    assert secrets() == ('whsec_d', None, None)
    assert secrets(other) == (None, None, None)


@contract
def test_events_are_numbered_per_order(db):
    from worker.notifications import events
    store = db.repositories.notifications
    a, b = new_order(db), new_order(db)
    assert read(db, singular.on(store).last_sequence, a) == 0
    assert write(db, singular.on(store).add_events, a, events.status_changed(
        models.PENDING), NOW) == [1]
    assert write(db, singular.on(store).add_events, b, [
        events.Event('step.done', models.PENDING, step=REQUEST)], NOW) == [1]
    assert write(db, singular.on(store).add_events, a, events.status_changed(
        models.ERROR, 'step x failed'), plus(1)) == [2, 3]
    assert read(db, singular.on(store).last_sequence, a) == 3

    found = read(db, store.events_of_order, a)
    assert [(e.sequence, e.event, e.status, e.step, e.detail, e.created_at)
            for e in found] == [
        (1, 'order.created', models.PENDING, None, None, NOW),
        (2, 'order.error', models.ERROR, None, {'reason': 'step x failed'},
         plus(1)),
        (3, 'order.end', models.ERROR, None, None, plus(1))]
    assert len({e.event_id for e in found}) == 3
    assert [e.sequence for e in read(db, singular.on(store).events_after, a, 1,
                                     1)] == \
        [2]
    assert [e.sequence for e in read(db, singular.on(store).events_after, a, 1,
                                     10)] == \
        [2, 3]
    assert [e.step for e in read(db, store.events_of_order, b)] == [REQUEST]


@contract
def test_events_and_deliveries_of_many_orders_at_once(db):
    from worker.notifications import events
    store, steps_repo = db.repositories.notifications, db.repositories.steps
    url = write(db, store.add_url, HOOK, NOW)
    name = models.delivery_name(url.id)
    a, b, bare = _subscribed(db, url.id), _subscribed(db, url.id), \
        new_order(db)
    write(db, singular.on(store).add_events, a,
          events.status_changed(models.PENDING), NOW)
    assert write(db, store.add_events_many, {
        a: events.status_changed(models.ACTIVE),
        b: events.status_changed(models.PENDING)}, plus(1)) == {
        a: [2, 3], b: [1]}
    assert read(db, store.last_sequences, [a, b, bare]) == {a: 3, b: 1}
    # One whose first run waits for its retry row: never cast.
    waits = new_order(db)
    write(db, steps_repo.create, waits, [name], {name}, NOW,
          dispatched=False)
    assert read(db, store.deliveries_of_orders, [a, b, bare, waits]) == {
        a: {name: (models.STEP_PENDING, 0, False)},
        b: {name: (models.STEP_PENDING, 0, False)},
        waits: {name: (models.STEP_PENDING, 0, True)}}
    found = read(db, store.events_after_many, {a: 1, b: 0}, 1)
    assert [(e.order_id, e.sequence) for e in found[a] + found[b]] == [
        (a, 2), (b, 1)]
    assert {url_id: row.url for url_id, row in read(
        db, store.get_urls, [url.id, url.id + 1]).items()} == {url.id: HOOK}

    # The finished delivery wakes, and the one whose first run waits;
    # not the one that is cast or running.
    assert write(db, singular.on(steps_repo).claim, a, name, 0, NOW, 'w',
                 plus(60))
    assert write(db, singular.on(steps_repo).record_delivery, a, name, 1,
                 plus(1), models.STEP_DONE, 3, 0)
    write(db, store.wake_many, [a, b, bare, waits], plus(2))
    for order_id in (a, waits):
        woken = step_of(db, order_id, name)
        assert (woken.status, woken.dispatched_at) == (
            models.STEP_PENDING, plus(2))
    assert step_of(db, b, name).dispatched_at == NOW


@sql_contract
def test_deliveries_wake_pause_and_resume(db):
    store, steps_repo = db.repositories.notifications, db.repositories.steps
    order_id = _subscribed(db, 1, 2)
    first, second = models.delivery_name(1), models.delivery_name(2)
    assert read(db, singular.on(store).deliveries, order_id) == {
        first: (models.STEP_PENDING, 0), second: (models.STEP_PENDING, 0)}
    assert read(db, store.count_open_deliveries) == {
        models.STEP_PENDING: 2}

    # Claimed, then: the first sent everything, the second waits.
    for name in (first, second):
        assert write(db, singular.on(steps_repo).claim, order_id, name, 0, NOW,
                     'w', plus(60))
    assert write(db, singular.on(steps_repo).record_delivery, order_id, first,
                 1, plus(1), models.STEP_DONE, 4, 0)
    assert write(db, singular.on(steps_repo).record_delivery, order_id, second,
                 1, plus(1), models.STEP_WAITING, 2, 7, 'HTTP 500')
    assert not write(db, singular.on(steps_repo).record_delivery, order_id,
                     first, 1, plus(1), models.STEP_DONE, 5, 0)
    done, waiting = (step_of(db, order_id, first),
                     step_of(db, order_id, second))
    assert (done.status, done.output, done.finished_at, done.owner) == (
        models.STEP_DONE, {'delivered_sequence': 4}, plus(1), None)
    assert (waiting.status, waiting.output, waiting.failures,
            waiting.last_error) == (
        models.STEP_WAITING, {'delivered_sequence': 2}, 7, 'HTTP 500')
    assert read(db, store.count_open_deliveries) == {
        models.STEP_WAITING: 1}

    # A new event wakes only the one that had sent everything.
    write(db, store.wake_many, [order_id], plus(2))
    woken = step_of(db, order_id, first)
    assert (woken.status, woken.dispatched_at, woken.finished_at) == (
        models.STEP_PENDING, plus(2), None)
    assert step_of(db, order_id, second).status == models.STEP_WAITING

    assert read(db, store.paused, 2, 10) == [(order_id, 1)]
    assert read(db, store.paused, 1, 10) == []
    write(db, db.queries.notifications.resume, 2, [order_id], plus(3))
    resumed = step_of(db, order_id, second)
    assert (resumed.status, resumed.dispatched_at, resumed.failures) == (
        models.STEP_PENDING, plus(3), 0)
    assert read(db, store.paused, 2, 10) == []


@contract
def test_an_order_that_ends_keeps_its_deliveries_and_their_retry_rows(db):
    tasks = db.repositories.retry_tasks
    order_id = _subscribed(db, 1)
    delivery = models.delivery_name(1)
    write(db, singular.on(tasks).add_retry, order_id, delivery, plus(5))
    write(db, singular.on(tasks).add_retry, order_id, REQUEST, plus(5))

    revoked = write(db, db.repositories.steps.revoke_open, order_id,
                    plus(1), 'order failed')
    write(db, tasks.delete_for_order, order_id)

    assert sorted(revoked) == [CHECK, REQUEST]
    assert step_of(db, order_id, delivery).status == models.STEP_PENDING
    assert [task.retry_task for task in read(db, tasks.list_tasks)] == [
        delivery]
    write(db, tasks.delete_for_order, order_id, delivery)
    assert read(db, tasks.list_tasks) == []


@contract
def test_a_url_s_owner(db):
    store = db.repositories.notifications
    added = write(db, store.add_url, HOOK, NOW)
    assert added.project_id is None
    write(db, store.set_owner, added.id, 'tenant-a', plus(1))
    url = read(db, store.find_url, HOOK)
    assert (url.project_id, url.updated_at) == ('tenant-a', plus(1))
    write(db, store.set_owner, added.id, None, plus(2))
    assert read(db, singular.on(store).get_url, added.id).project_id is None


@sql_contract
def test_secrets_are_replaced_only_if_unchanged(db):
    store = db.repositories.notifications
    added = write(db, store.add_url, HOOK, NOW)
    write(db, store.set_secret, added.id, 'token-1', None, plus(1))
    assert write(db, db.queries.notifications.replace_secrets, added.id,
                 ('token-1', None), ('token-2', None))
    url = read(db, singular.on(store).get_url, added.id)
    assert (url.secret, url.previous_secret) == ('token-2', None)
    # A set-secret came between the read and the write: nothing written.
    assert not write(db, db.queries.notifications.replace_secrets, added.id,
                     ('token-1', None), ('token-3', None))
    write(db, store.set_secret, added.id, 'token-4', plus(60), plus(2))
    assert write(db, db.queries.notifications.replace_secrets, added.id,
                 ('token-4', 'token-2'), ('token-5', 'token-6'))
    url = read(db, singular.on(store).get_url, added.id)
    assert (url.secret, url.previous_secret) == ('token-5', 'token-6')
