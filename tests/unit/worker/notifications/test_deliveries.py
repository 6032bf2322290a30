"""Events and their deliveries against the in-memory database.

A delivery is a step of its order (``notify:<url id>``): these tests run
it through the worker manager, with a sender that answers as scripted,
and check what it sent, in which order, and the state it left.
"""

import datetime

import pytest

from tests import config
from tests import fakes
from worker.api import casts
from worker.api import commands
from worker.api import requests
from worker.db import memory
from worker.db import models
from worker.db import orders
from worker import manager
from worker.notifications import events
from worker import order_types
from worker.plugins import base
from worker import rpcapi

NOW = datetime.datetime(2026, 11, 25, 12, 0, 0)
OWNER = '1@worker-host'
REQUEST = 'process_type_order'
CHECK = 'check_certificate_status'
URL = 'https://hooks.example.org/orders'
OTHER = 'https://other.example.org/orders'
DELIVERY = 'notify:1'
PROJECT = 'tenant-1'


class ScriptedSender:
    """Answers each request with the next of ``answers`` (None: a 2xx;
    text: a failure), then with 2xx; records what it was sent."""

    def __init__(self, *answers, during=None):
        self.answers = list(answers)
        self.during = during
        self.sent = []
        #: The keys each request was signed with.
        self.keys = []

    def send(self, url, payload, keys=()):
        self.sent.append((url, payload))
        self.keys.append(list(keys))
        if self.during is not None:
            self.during(url, payload)
        return self.answers.pop(0) if self.answers else None

    def sequences(self, url=URL):
        return [payload['sequence'] for sent_to, payload in self.sent
                if sent_to == url]


class Plugin(base.CertificatePluginBase):
    """Issues at once."""

    def issue_certificate_request(self, order):
        return base.Completed(meta={'certificate': 'pem'})

    def check_certificate_status(self, order):
        return base.Completed()


@pytest.fixture
def database(monkeypatch):
    from worker.order_types import certificate
    monkeypatch.setattr(certificate.CertificateOrder, 'build',
                        classmethod(lambda cls, conf: cls(Plugin())))
    return memory.InMemoryDatabase()


class Worker:
    """A worker manager with a scripted sender; ``deliver`` runs what it
    cast."""

    def __init__(self, database, sender, topic=None, **overrides):
        options = {'notifications.retry_jitter': False,
                   'notifications.retry_base_seconds': 1.0}
        options.update(overrides)
        self.client = fakes.RecordingRPCClient()
        self.observed = []
        self.delivered = []
        self.manager = manager.WorkerManager(
            config.make_conf(**options), database, OWNER,
            worker_api=rpcapi.WorkerAPI(self.client), clock=lambda: NOW,
            observe_result=self.observed.append,
            observe_delivery=lambda sent, failed: self.delivered.append(
                (sent, failed)),
            sender=sender, step_concurrency=2, topic=topic)

    def run(self, name, order_id, generation):
        self.manager.run_steps({}, [[name, order_id, generation]])

    def deliver(self):
        while self.client.messages:
            ctxt, kwargs = self.client.delivered()
            self.manager.run_steps(ctxt, kwargs['steps'])


def _order(database, urls=(URL,), first_run_delay=0.0):
    [order] = commands.create(database, requests.CreateOrders(
        order_types.get('certificate'), {}, notify=list(urls),
        origin=orders.Origin(project_id=PROJECT),
        first_run_delay=first_run_delay), NOW).orders
    return order.id


def _step(database, order_id, name):
    with database.reader() as session:
        return database.repositories.steps.for_order(session,
                                                     order_id)[name]


def _url(database, url=URL):
    with database.reader() as session:
        return database.repositories.notifications.find_url(session, url)


def _retries(database, order_id):
    with database.reader() as session:
        return database.repositories.retry_tasks.list_tasks(
            session, order_id=order_id)


def _history(database, order_id, step=DELIVERY):
    """``(attempt, result, error)`` of each run of the order's ``step``,
    oldest first."""
    with database.reader() as session:
        runs = database.repositories.history.for_order(session, order_id)
    return [(run.attempt, run.result, run.error) for run in runs
            if run.step == step]


def _run_order(worker, order_id):
    """Run the order's two steps; the deliveries they wake are cast."""
    worker.run(REQUEST, order_id, 0)
    worker.run(CHECK, order_id, 0)


def test_an_order_sends_its_events_in_order_then_its_delivery_rests(
        database):
    sender = ScriptedSender()
    worker = Worker(database, sender)
    order_id = _order(database)

    worker.run(DELIVERY, order_id, 0)
    assert sender.sequences() == [1]
    assert _step(database, order_id, DELIVERY).status == models.STEP_DONE

    _run_order(worker, order_id)
    # The order's end woke the delivery: cast with its current token.
    assert (DELIVERY, {'order_id': order_id, 'generation': 1}) in \
        worker.client.casts
    worker.deliver()

    assert sender.sequences() == [1, 2, 3]
    payloads = [payload for _, payload in sender.sent]
    assert [(p['event'], p['status']) for p in payloads] == [
        ('order.created', 'PENDING'), ('order.active', 'ACTIVE'),
        ('order.end', 'ACTIVE')]
    first = payloads[0]
    assert set(first) == {'event_id', 'order_id', 'project_id', 'sequence',
                          'time', 'status', 'event'}
    assert (first['order_id'], first['project_id']) == (order_id, PROJECT)
    assert first['time'] == '2026-11-25T12:00:00.000000Z'
    assert len({p['event_id'] for p in payloads}) == 3
    step = _step(database, order_id, DELIVERY)
    assert (step.status, step.output) == (models.STEP_DONE,
                                          {'delivered_sequence': 3})
    assert worker.delivered == [(1, False), (2, False)]


def test_the_order_s_end_wakes_its_delivery_on_this_worker_uncast(
        database):
    sender = ScriptedSender()
    # A worker of [worker] topic, where deliveries are cast.
    worker = Worker(database, sender, topic='barbican_retry_worker')
    order_id = _order(database)
    worker.run(DELIVERY, order_id, 0)

    # The status check follows here, then the delivery its end woke.
    worker.run(REQUEST, order_id, 0)

    assert worker.client.casts == []
    assert sender.sequences() == [1, 2, 3]
    assert _history(database, order_id) == [(1, models.RUN_DONE, None),
                                            (2, models.RUN_DONE, None)]


def test_each_request_is_signed_with_its_url_s_keys_of_the_moment(
        database):
    """The URL's secrets come with its row: its own, the previous one
    until it expires (by the worker's clock), the global one without."""
    new, old = 'whsec_' + 'B' * 44, 'whsec_' + 'A' * 44
    sender = ScriptedSender()
    worker = Worker(database, sender, **{'notifications.secret': 'global'})
    first, second = _order(database), _order(database)
    worker.run(DELIVERY, first, 0)
    url_id = _url(database).id
    store = database.repositories.notifications
    for secret, until in ((old, None),
                          (new, NOW + datetime.timedelta(seconds=1))):
        with database.session() as session, session.begin():
            store.set_secret(session, url_id, secret, until, NOW)
    worker.run(DELIVERY, second, 0)
    with database.session() as session, session.begin():
        store.set_secret(session, url_id, new, NOW, NOW)
    _run_order(worker, first)
    worker.deliver()
    assert sender.keys == [[b'global'], [new, old], [new], [new]]


def test_a_first_run_that_waits_sends_the_events_of_a_quick_order_at_once(
        database):
    sender = ScriptedSender()
    worker = Worker(database, sender)
    order_id = _order(database, first_run_delay=30.0)
    # Not cast: a retry row starts it in 30 s unless an event comes first.
    [row] = _retries(database, order_id)
    assert (row.retry_task, row.retry_at) == (
        DELIVERY, NOW + datetime.timedelta(seconds=30))

    _run_order(worker, order_id)
    assert (DELIVERY, {'order_id': order_id, 'generation': 0}) in \
        worker.client.casts
    assert _retries(database, order_id) == []
    worker.deliver()
    assert sender.sequences() == [1, 2, 3]
    assert worker.delivered == [(3, False)]
    assert _step(database, order_id, DELIVERY).status == models.STEP_DONE


def test_events_written_while_a_delivery_runs_are_sent_by_it_next(
        database):
    worker = None

    def order_moves_on(url, payload):
        if payload['sequence'] == 1:
            _run_order(worker, payload['order_id'])

    sender = ScriptedSender(during=order_moves_on)
    worker = Worker(database, sender)
    order_id = _order(database)
    worker.run(DELIVERY, order_id, 0)
    # The run sent what it read; its result saw newer events and cast the
    # delivery again rather than rest.
    assert sender.sequences() == [1]
    assert _step(database, order_id, DELIVERY).status == \
        models.STEP_PENDING
    worker.deliver()
    assert sender.sequences() == [1, 2, 3]
    assert _step(database, order_id, DELIVERY).status == models.STEP_DONE
    # Released with more to send, as a poll: no error.
    assert _history(database, order_id) == [
        (1, models.RUN_RETRY, None), (2, models.RUN_DONE, None)]


def test_a_failed_request_is_retried_after_a_back_off_and_goes_on(
        database):
    sender = ScriptedSender('HTTP 500: nope', 'HTTP 503: later')
    worker = Worker(database, sender)
    order_id = _order(database)

    worker.run(DELIVERY, order_id, 0)
    step = _step(database, order_id, DELIVERY)
    assert (step.status, step.failures, step.generation) == (
        models.STEP_PENDING, 1, 1)
    assert step.last_error.startswith('HTTP 500: nope (event 1')
    [retry] = _retries(database, order_id)
    assert (retry.retry_task, retry.retry_at) == (
        DELIVERY, NOW + datetime.timedelta(seconds=1))
    url = _url(database)
    assert (url.available, url.failures) == (True, 1)

    worker.run(DELIVERY, order_id, 1)
    [retry] = _retries(database, order_id)
    assert retry.retry_at == NOW + datetime.timedelta(seconds=2)
    worker.run(DELIVERY, order_id, 2)

    assert sender.sequences() == [1, 1, 1]
    step = _step(database, order_id, DELIVERY)
    assert (step.status, step.failures) == (models.STEP_DONE, 0)
    assert _url(database).failures == 0
    assert worker.observed == ['retry', 'retry', 'delivered']
    runs = _history(database, order_id)
    assert [run[:2] for run in runs] == [
        (1, models.RUN_RETRY), (2, models.RUN_RETRY), (3, models.RUN_DONE)]
    assert runs[0][2].startswith('HTTP 500: nope (event 1')
    assert runs[1][2].startswith('HTTP 503: later (event 1')
    assert runs[2][2] is None


def test_a_url_failing_too_often_becomes_unavailable_and_others_go_on(
        database):
    sender = ScriptedSender('HTTP 500: a', 'HTTP 500: b')
    worker = Worker(database, sender,
                    **{'notifications.max_consecutive_failures': 2})
    order_id = _order(database, urls=(URL, OTHER))
    worker.run(DELIVERY, order_id, 0)
    worker.run(DELIVERY, order_id, 1)

    step = _step(database, order_id, DELIVERY)
    assert (step.status, step.failures) == (models.STEP_WAITING, 2)
    assert _retries(database, order_id) == []
    url = _url(database)
    assert (url.available, url.disabled_at) == (False, NOW)
    # The other URL is not held up.
    worker.run('notify:2', order_id, 0)
    assert sender.sequences(OTHER) == [1]

    # A delivery of another order to it waits too, without a request.
    second = _order(database)
    worker.run(DELIVERY, second, 0)
    assert _step(database, second, DELIVERY).status == models.STEP_WAITING
    assert sender.sequences() == [1, 1]
    assert worker.observed[-1] == 'paused'
    with database.reader() as session:
        waiting = database.repositories.notifications.paused(session, 1,
                                                             10)
    assert sorted(order for order, _ in waiting) == sorted([order_id,
                                                            second])
    # Waiting for its URL is a release for a later run (an enable), with
    # the error that made the URL unavailable, or why it waits.
    assert [run[1] for run in _history(database, order_id)] == [
        models.RUN_RETRY] * 2
    assert _history(database, order_id)[1][2].startswith('HTTP 500: b')
    assert _history(database, second) == [
        (1, models.RUN_RETRY, 'URL %s is unavailable' % URL)]


def test_an_order_without_subscribers_writes_no_event(database):
    worker = Worker(database, ScriptedSender())
    [order] = commands.create(database, requests.CreateOrders(
        order_types.get('certificate'), {}), NOW).orders
    _run_order(worker, order.id)
    with database.reader() as session:
        assert database.repositories.notifications.events_of_order(
            session, order.id) == []
    assert worker.client.casts == [(CHECK, {'order_id': order.id,
                                            'generation': 0})]


def test_step_events_when_the_order_type_asks_for_them(database):
    sender = ScriptedSender()
    worker = Worker(database, sender,
                    **{'order_type:certificate.step_events': True})
    order_id = _order(database)
    _run_order(worker, order_id)
    worker.run(DELIVERY, order_id, 0)
    worker.deliver()
    assert [(p['sequence'], p['event'], p.get('step'))
            for _, p in sender.sent] == [
        (1, 'order.created', None), (2, 'step.done', REQUEST),
        (3, 'step.done', CHECK), (4, 'order.active', None),
        (5, 'order.end', None)]


def test_a_cancelled_order_notifies_its_end_and_keeps_its_deliveries(
        database, sqlite_database):
    # SQLite: cancelling is the API's write (``worker.db.queries``).
    database = sqlite_database
    sender = ScriptedSender()
    worker = Worker(database, sender)
    order_id = _order(database)
    cancelled = commands.cancel(
        database, order_types.get('certificate'), order_id,
        'no longer needed', NOW)
    casts.cast_steps(rpcapi.WorkerAPI(worker.client), cancelled.to_cast)
    assert sorted(cancelled.revoked) == [CHECK, REQUEST]
    assert _step(database, order_id, DELIVERY).status == \
        models.STEP_PENDING
    worker.run(DELIVERY, order_id, 0)
    assert [(p['event'], p['status'], p.get('detail'))
            for _, p in sender.sent] == [
        ('order.created', 'PENDING', None),
        ('order.cancelled', 'CANCELLED', {'reason': 'no longer needed'}),
        ('order.end', 'CANCELLED', None)]


def test_a_delivery_taken_back_while_it_ran_has_no_effect(database):
    def taken_back(url, payload):
        with database.session() as session, session.begin():
            assert database.repositories.steps.take_back(
                session, payload['order_id'], DELIVERY, 1, NOW)

    sender = ScriptedSender(during=taken_back)
    worker = Worker(database, sender)
    order_id = _order(database)
    worker.run(DELIVERY, order_id, 0)
    step = _step(database, order_id, DELIVERY)
    # The run's result was discarded; the new token sends it again.
    assert (step.status, step.generation, step.output) == (
        models.STEP_PENDING, 2, None)
    assert worker.observed == ['superseded']
    assert _history(database, order_id) == [
        (1, models.RUN_SUPERSEDED, None)]


def test_the_events_of_a_status_change(database):
    assert events.status_changed(models.ERROR, 'step x failed') == [
        events.Event('order.error', models.ERROR,
                     detail={'reason': 'step x failed'}),
        events.Event('order.end', models.ERROR)]
    assert events.status_changed(models.CANCELLING) == [
        events.Event('order.cancelling', models.CANCELLING)]
