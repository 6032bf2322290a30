"""``worker.api.OrderAPI`` on the in-memory database, with a recording
RPC client: what a service that builds on it can rely on."""

import collections
import datetime
import types

from oslo_context import context as context_module
from oslo_db import exception as db_exception
import pytest

from tests import config
from tests import fakes
from worker import api
from worker.api import queries
from worker.api import requests
from worker.db import models
from worker.db import orders as sql_orders
from worker.db import rows
from worker import rpcapi


@pytest.fixture
def database(sqlite_database):
    """SQLite, not the fake: the API's queries (``worker.db.queries``)
    are SQL only."""
    return sqlite_database


NOW = datetime.datetime(2026, 11, 26, 12, 0, 0)
PROJECT = 'c0ffee0000000000000000000000beef'
OTHER = 'another-project'
META = {'unavailable_attempts': 1}


class Clock:
    """A clock that moves only when told (or when ``sleep`` is called)."""

    def __init__(self):
        self.now = NOW
        self.monotonic = 0.0

    def sleep(self, seconds):
        self.monotonic += seconds
        self.now += datetime.timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(queries.time, 'sleep', clock.sleep)
    monkeypatch.setattr(queries.time, 'monotonic', lambda: clock.monotonic)
    return clock


@pytest.fixture
def orders(database, client, clock, conf):
    return api.OrderAPI(database, conf, rpcapi.WorkerAPI(client),
                        now=lambda: clock.now)


def _count(database):
    with database.reader() as session:
        return sum(database.repositories.orders.count_by_status(
            session).values())


def _fail(database, order_id, now):
    with database.session() as session, session.begin():
        database.repositories.orders.fail(session, order_id, now, 'broken')


def test_create_returns_the_pending_order_with_its_first_steps_queued(
        orders, client):
    context = context_module.RequestContext(
        global_request_id='req-%s' % ('1' * 8 + '-1111-1111-1111-' +
                                      '1' * 12), overwrite=False)
    order = orders.create('fanout', META, project_id=PROJECT, priority=3,
                          context=context)
    assert isinstance(order, api.Order)
    assert (order.type, order.status, order.project_id, order.priority,
            order.meta) == ('fanout', api.PENDING, PROJECT, 3, META)
    assert order.request_id == context.request_id
    assert order.global_request_id == context.global_request_id
    statuses = {step.name: step.status for step in order.steps}
    assert statuses == {'check_domains': 'QUEUED', 'check_caa': 'QUEUED',
                        'check_key': 'QUEUED', 'issue': 'WAITING',
                        'poll': 'WAITING', 'store': 'WAITING',
                        'notify': 'WAITING'}
    assert sorted(name for name, _ in client.casts) == [
        'check_caa', 'check_domains', 'check_key']
    # The cast carries the order's request ids, for the workers' logs.
    [sent] = client.contexts
    assert (sent['request_id'], sent['global_request_id']) == (
        order.request_id, order.global_request_id)
    assert sent['orders'] == {order.id: [order.request_id,
                                         order.global_request_id]}
    assert orders.get(order.id, all_projects=True) == order


def test_an_order_with_callback_urls_has_their_deliveries(orders):
    order = orders.create('certificate', {}, project_id=PROJECT,
                          callback_urls=['https://hooks.example.org/a'])
    assert [(step.name, step.status) for step in order.steps] == [
        ('process_type_order', 'QUEUED'),
        ('check_certificate_status', 'WAITING'), ('notify:1', 'QUEUED')]
    assert orders.get(order.id, all_projects=True) == order


def test_a_new_request_id_when_the_caller_gives_no_context(orders):
    first = orders.create('certificate', {}, project_id=PROJECT)
    second = orders.create('certificate', {}, project_id=PROJECT)
    assert first.request_id.startswith('req-')
    assert first.request_id != second.request_id


def test_values_are_frozen(orders):
    order = orders.create('certificate', {}, project_id=PROJECT)
    with pytest.raises(AttributeError):
        order.status = api.ACTIVE
    with pytest.raises(AttributeError):
        order.steps[0].status = 'DONE'


def test_the_same_key_and_request_returns_the_first_order(
        orders, client, database):
    first = orders.create('certificate', META, project_id=PROJECT,
                          idempotency_key='k1')
    again = orders.create('certificate', dict(META), project_id=PROJECT,
                          idempotency_key='k1')
    assert again.id == first.id
    assert again.idempotency_key == 'k1'
    assert _count(database) == 1
    assert len(client.casts) == 1


def test_the_same_request_after_the_operator_changed_the_endpoints(
        orders, database, conf):
    first = orders.create('certificate', META, project_id=PROJECT,
                          idempotency_key='k1')
    conf.set_override('endpoints', ['https://hooks.example.org/a'],
                      'notifications')
    assert orders.create('certificate', META, project_id=PROJECT,
                         idempotency_key='k1').id == first.id
    assert _count(database) == 1


@pytest.mark.parametrize('spelling', [
    'HTTPS://Hooks.Example.org:443/x#',
    'https://hooks.example.org./x',
])
def test_the_same_key_with_another_spelling_of_its_urls_is_the_same(
        orders, database, spelling):
    """One receiver, one request: URLs are compared canonical."""
    first = orders.create('certificate', META, project_id=PROJECT,
                          idempotency_key='k1',
                          callback_urls=['https://hooks.example.org/x'])
    assert orders.create('certificate', META, project_id=PROJECT,
                         idempotency_key='k1',
                         callback_urls=[spelling]).id == first.id
    assert _count(database) == 1


def test_a_key_stored_by_the_release_before_canonical_urls_still_matches(
        orders, database, monkeypatch):
    """Its fingerprint holds the URLs as they were given: a retry
    spelling them the same is still the same request."""
    spelling = ['HTTPS://Hooks.Example.org:443/x']
    with monkeypatch.context() as before:
        before.setattr(requests, 'canonical_urls', lambda urls: urls)
        first = orders.create('certificate', META, project_id=PROJECT,
                              idempotency_key='k1', callback_urls=spelling)
    assert orders.create('certificate', META, project_id=PROJECT,
                         idempotency_key='k1',
                         callback_urls=spelling).id == first.id
    assert _count(database) == 1


def test_the_same_key_in_another_project_is_another_order(orders):
    first = orders.create('certificate', META, project_id=PROJECT,
                          idempotency_key='k1')
    other = orders.create('certificate', META, project_id=OTHER,
                          idempotency_key='k1')
    assert other.id != first.id


@pytest.mark.parametrize('change', [
    dict(order_type='fanout'),
    dict(meta={'unavailable_attempts': 2}),
    dict(priority=1),
    dict(callback_urls=['https://hooks.example.org/x']),
])
def test_the_same_key_with_another_request_is_a_conflict(
        orders, database, change):
    first = orders.create('certificate', META, project_id=PROJECT,
                          idempotency_key='k1')
    request = dict(order_type='certificate', meta=META)
    request.update(change)
    with pytest.raises(api.IdempotencyConflict, match='k1') as raised:
        orders.create(request.pop('order_type'), request.pop('meta'),
                      project_id=PROJECT, idempotency_key='k1', **request)
    assert raised.value.order_id == first.id
    assert _count(database) == 1


def test_a_create_that_loses_the_race_for_its_key_returns_the_winner(
        orders, database, monkeypatch):
    winner = orders.create('certificate', META, project_id=PROJECT,
                           idempotency_key='k1')
    repository = database.repositories.orders
    find = repository.find_by_key
    calls = []

    def first_read_before_the_winner_committed(session, project, key):
        calls.append(key)
        return None if len(calls) == 1 else find(session, project, key)

    monkeypatch.setattr(repository, 'find_by_key',
                        first_read_before_the_winner_committed)
    assert orders.create('certificate', META, project_id=PROJECT,
                         idempotency_key='k1').id == winner.id
    assert len(calls) == 2
    assert _count(database) == 1


def test_a_duplicate_that_is_not_the_key_is_raised(orders, database,
                                                   monkeypatch):
    def refuse(*args, **kwargs):
        raise db_exception.DBDuplicateEntry(columns=['id'])

    monkeypatch.setattr(database.repositories.orders, 'create', refuse)
    with pytest.raises(db_exception.DBDuplicateEntry):
        orders.create('certificate', META, project_id=PROJECT)


@pytest.mark.parametrize('arguments, error, message', [
    (dict(order_type='nope'), api.UnknownOrderType, 'installed'),
    (dict(meta=['a']), api.InvalidMeta, "at \\$: .* not of type 'object'"),
    (dict(meta={'unavailable_attempts': 'x'}), api.InvalidMeta,
     r"at \$\.unavailable_attempts: 'x' is not of type 'integer' "
     r"\(rule: type\)"),
    (dict(priority=10), api.InvalidRequest, 'priority'),
    (dict(project_id=''), api.InvalidRequest, 'project_id'),
    (dict(project_id='p' * 65), api.InvalidRequest, 'project_id'),
    (dict(idempotency_key=''), api.InvalidRequest, 'idempotency_key'),
    (dict(callback_urls=['https://elsewhere.example.com/']),
     api.URLNotAllowed, 'allowed_hosts'),
    (dict(callback_urls='https://hooks.example.org/'), api.InvalidRequest,
     'list'),
])
def test_a_refused_request_says_why_and_writes_nothing(
        orders, database, client, arguments, error, message):
    request = dict(order_type='certificate', meta={}, project_id=PROJECT)
    request.update(arguments)
    with pytest.raises(error, match=message):
        orders.create(request.pop('order_type'), request.pop('meta'),
                      **request)
    assert _count(database) == 0
    assert client.casts == []


def test_invalid_meta_names_the_path_and_the_rule(orders):
    with pytest.raises(api.InvalidMeta) as raised:
        orders.create('fanout', {'polls': -1, 'typo': 1},
                      project_id=PROJECT)
    assert isinstance(raised.value, ValueError)
    assert (raised.value.path, raised.value.rule) in {
        ('$.polls', 'minimum'), ('$', 'additionalProperties')}
    with pytest.raises(api.InvalidMeta) as raised:
        orders.create('fanout', {'polls': 'x' * 10000}, project_id=PROJECT)
    assert len(str(raised.value)) < 400


def test_create_many_creates_count_orders_of_one_request(orders, client):
    created = orders.create_many('certificate', {}, 3, project_id=PROJECT)
    assert len({order.id for order in created}) == 3
    assert all(order.project_id == PROJECT for order in created)
    assert len(client.casts) == 3
    with pytest.raises(api.InvalidRequest, match='count'):
        orders.create_many('certificate', {}, 0, project_id=PROJECT)


def test_a_project_never_sees_another_projects_order(orders):
    theirs = orders.create('certificate', {}, project_id=OTHER)
    for read in (orders.get, orders.find, orders.cancel):
        with pytest.raises(api.OrderNotFound):
            read(theirs.id, project_id=PROJECT)
    with pytest.raises(api.OrderNotFound):
        orders.wait(theirs.id, timeout=5, project_id=PROJECT)
    assert orders.list(project_id=PROJECT) == []
    assert orders.get(theirs.id, project_id=OTHER).id == theirs.id
    assert orders.get(theirs.id, all_projects=True).id == theirs.id


def test_list_pages_in_creation_order(orders, clock):
    created = []
    for index in range(5):
        created.append(orders.create('certificate', {}, project_id=PROJECT))
        clock.sleep(1)
    orders.create('fanout', {}, project_id=PROJECT)
    orders.create('certificate', {}, project_id=OTHER)
    first = orders.list(project_id=PROJECT, order_type='certificate',
                        limit=3)
    second = orders.list(project_id=PROJECT, order_type='certificate',
                         limit=3, marker=first[-1].id)
    assert [order.id for order in first + second] == [
        order.id for order in created]
    assert all(order.steps == () for order in first)
    assert len(orders.list(all_projects=True)) == 7
    assert orders.list(status=api.ACTIVE, all_projects=True) == []


@pytest.mark.parametrize('arguments, message', [
    (dict(limit=0), 'limit'), (dict(limit=api.MAX_LIMIT + 1), 'limit'),
    (dict(status='DONE'), 'status'), (dict(marker='nope'), 'marker'),
])
def test_list_refuses_what_cannot_be_right(orders, arguments, message):
    with pytest.raises(api.InvalidRequest, match=message):
        orders.list(all_projects=True, **arguments)


def test_a_marker_of_another_project_is_refused(orders):
    theirs = orders.create('certificate', {}, project_id=OTHER)
    with pytest.raises(api.InvalidRequest, match='marker'):
        orders.list(project_id=PROJECT, marker=theirs.id)


def test_find_takes_a_unique_prefix(orders, monkeypatch):
    ids = iter(['abc11111-0000-4000-8000-000000000000',
                'abc22222-0000-4000-8000-000000000000'])
    monkeypatch.setattr(sql_orders, 'uuid',
                        types.SimpleNamespace(uuid4=lambda: next(ids)))
    first = orders.create('certificate', {}, project_id=PROJECT)
    orders.create('certificate', {}, project_id=OTHER)
    assert orders.find('abc1', all_projects=True).id == first.id
    assert orders.find(first.id, all_projects=True).id == first.id
    with pytest.raises(api.AmbiguousOrderId, match='several'):
        orders.find('abc', all_projects=True)
    assert orders.find('abc', project_id=PROJECT).id == first.id
    with pytest.raises(api.OrderNotFound):
        orders.find('fff', all_projects=True)


def test_history_lists_the_runs_of_an_orders_steps_oldest_first(
        orders, database):
    order = orders.create('certificate', {}, project_id=PROJECT)
    other = orders.create('certificate', {}, project_id=PROJECT)
    later = NOW + datetime.timedelta(seconds=5)
    with database.session() as session, session.begin():
        database.repositories.history.add_many(session, [
            rows.StepRun(order.id, 'process_type_order', 1, 1, '1@a', NOW,
                         later, models.RUN_RETRY, 'E' * 2000),
            rows.StepRun(other.id, 'process_type_order', 1, 1, '1@a', NOW,
                         later, models.RUN_DONE),
            rows.StepRun(order.id, 'process_type_order', 2, 2, '2@b', later,
                         later, models.RUN_DONE)])

    runs = orders.history(order.id[:12], all_projects=True)

    assert runs == orders.history(order.id, project_id=PROJECT)
    first, second = runs
    assert isinstance(first, api.StepRun)
    assert (first.step, first.attempt, first.worker, first.started_at,
            first.finished_at, first.result, first.generation) == (
        'process_type_order', 1, '1@a', NOW, later, 'retry', 1)
    assert len(first.error) == models.RUN_ERROR_LENGTH
    assert (second.attempt, second.worker, second.result,
            second.error) == (2, '2@b', 'done', None)
    assert orders.history(orders.create('fanout', {},
                                        project_id=PROJECT).id,
                          project_id=PROJECT) == ()
    with pytest.raises(api.OrderNotFound):
        orders.history(order.id, project_id=OTHER)
    with pytest.raises(api.OrderNotFound):
        orders.history('no-such-order', all_projects=True)


def test_cancel_cancels_a_pending_order_once(orders, database):
    order = orders.create('certificate', {}, project_id=PROJECT)
    cancelled = orders.cancel(order.id, project_id=PROJECT)
    assert cancelled.status == api.CANCELLED
    assert {step.status for step in cancelled.steps} == {'CANCELLED'}
    assert orders.cancel(order.id, all_projects=True).status == api.CANCELLED


def test_an_order_that_ended_cannot_be_cancelled(orders, database, clock):
    order = orders.create('certificate', {}, project_id=PROJECT)
    _fail(database, order.id, clock.now)
    with pytest.raises(api.OrderNotCancellable, match='ERROR'):
        orders.cancel(order.id, all_projects=True)


def test_wait_returns_the_order_once_it_ended(orders, database, clock,
                                              monkeypatch):
    order = orders.create('certificate', {}, project_id=PROJECT)
    repository = database.repositories.orders
    reads = []
    status_of = repository.status_of

    def ends_at_the_third_read(session, order_id):
        reads.append(clock.monotonic)
        if len(reads) == 3:
            _fail(database, order_id, clock.now)
        return status_of(session, order_id)

    monkeypatch.setattr(repository, 'status_of', ends_at_the_third_read)
    ended = orders.wait(order.id, timeout=30, project_id=PROJECT)
    assert ended.status == api.ERROR
    assert ended.error_reason == 'broken'
    # One read a second, no more.
    assert reads == [1.0, 2.0, 3.0]


def test_wait_times_out_with_the_order_as_last_read(orders, clock):
    order = orders.create('certificate', {}, project_id=PROJECT)
    with pytest.raises(api.Timeout, match='still PENDING') as raised:
        orders.wait(order.id, timeout=2.5, all_projects=True)
    assert raised.value.order.id == order.id
    assert clock.monotonic == 2.5


def test_order_types_show_their_steps_and_compensation():
    infos = {info.name: info for info in api.order_type_infos()}
    assert infos['certificate'].steps == (
        ('process_type_order', ()),
        ('check_certificate_status', ('process_type_order',)))
    assert api.order_type_info('certificate') == infos['certificate']
    with pytest.raises(api.UnknownOrderType):
        api.order_type_info('nope')


def test_an_order_of_a_status_that_is_final_is_never_waited_for():
    assert set(api.FINAL_STATUSES) == {models.ACTIVE, models.ERROR,
                                       models.CANCELLED}


def test_an_order_types_steps_go_to_its_topic_its_deliveries_do_not(
        database, clock):
    conf = config.make_conf(**{
        'order_type:fanout.topic': 'slow_topic',
        'notifications.allowed_hosts': ['hooks.example.org']})
    clients = collections.defaultdict(fakes.RecordingRPCClient)
    orders = api.OrderAPI(database, conf, rpcapi.WorkerAPI(
        clients[conf.worker.topic],
        rpcapi.Topics(conf, clients.__getitem__)), now=lambda: clock.now)
    slow, default = clients['slow_topic'], clients[conf.worker.topic]

    cancelled = orders.create('fanout', {}, project_id=PROJECT,
                              callback_urls=['https://hooks.example.org/'])
    certificate = orders.create('certificate', {}, project_id=PROJECT)
    assert sorted(name for name, _ in slow.casts) == [
        'check_caa', 'check_domains', 'check_key']
    assert sorted(name for name, _ in default.casts) == [
        'notify:1', 'process_type_order']
    assert len(slow.messages) == len(default.messages) - 1 == 1

    orders.cancel(cancelled.id, all_projects=True)
    resumed = orders.create('fanout', {}, project_id=PROJECT)
    _fail(database, resumed.id, clock.now)
    orders.resume(resumed.id, all_projects=True)
    assert [(name, kwargs['order_id']) for name, kwargs in slow.casts[3:]
            if name in ('revoke', 'check_caa')] == [
        ('revoke', cancelled.id), ('check_caa', resumed.id),
        ('check_caa', resumed.id)]
    assert {kwargs['order_id'] for _, kwargs in default.casts} == {
        cancelled.id, certificate.id}
