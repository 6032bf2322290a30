"""Resuming ERROR orders: ``worker.api.OrderAPI.resume`` and
``resume_many`` on the in-memory database with a recording RPC client, and
the plan of which steps run again (``worker.api.commands.restart_plan``)."""

import datetime

from oslo_context import context as context_module
import pytest

from tests import fakes
from tests import singular
from worker import api
from worker.api import commands
from worker.db import models
from worker.notifications import events
from worker import order_types
from worker import rpcapi


@pytest.fixture
def database(sqlite_database):
    """SQLite, not the fake: the API's queries (``worker.db.queries``)
    are SQL only."""
    return sqlite_database


NOW = datetime.datetime(2026, 11, 26, 12, 0, 0)
PROJECT = 'p1'
CHECKS = ('check_domains', 'check_caa', 'check_key')
LATER = ('poll', 'store', 'notify')
DONE, FAILED, CANCELLED, WAITING = (
    models.STEP_DONE, models.STEP_FAILED, models.STEP_CANCELLED,
    models.STEP_WAITING)


class Clock:
    """A clock moved by hand."""

    def __init__(self):
        self.now = NOW

    def tick(self, seconds=1):
        self.now += datetime.timedelta(seconds=seconds)


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def orders(database, client, clock, conf):
    return api.OrderAPI(database, conf, rpcapi.WorkerAPI(client),
                        now=lambda: clock.now)


def _run(database, order_id, step, now, status, output=None):
    """Claim ``step`` and end it ``status``, as a worker would."""
    steps = database.repositories.steps
    with database.session() as session, session.begin():
        generation = steps.for_order(session, order_id)[step].generation
        assert singular.claim(steps, session, order_id, step, generation, now,
                              'w@h', now + datetime.timedelta(seconds=60))
        assert singular.finish(steps, session, order_id, step, generation + 1,
                               now, status, output=output,
                               last_error=None if status == DONE else 'no')
        if status == DONE:
            singular.start(steps, session, order_id,
                           order_types.get('fanout').ready(
                               {name for name, step in steps.for_order(
                                   session, order_id).items()
                                if step.status == DONE}, set(CHECKS)),
                           now, True)


def _fail_order(database, order_id, now, step):
    """End ``step`` FAILED and the order ERROR, its open steps cancelled
    and a retry row of one of them left behind, as ``outcomes`` does."""
    _run(database, order_id, step, now, FAILED)
    repositories = database.repositories
    with database.session() as session, session.begin():
        singular.add_retry(repositories.retry_tasks, session, order_id,
                           'check_caa', now, args=[], kwargs={},
                           retry_count=0)
        assert repositories.orders.fail(session, order_id, now,
                                        'step %s failed' % step)
        repositories.steps.revoke_open(session, order_id, now, 'failed')


def _failed_at_issue(orders, database, clock, **create):
    """A fanout order whose checks are DONE and whose issue FAILED."""
    order = orders.create('fanout', {}, project_id=PROJECT, **create)
    for step in CHECKS:
        _run(database, order.id, step, clock.now, DONE, {step: 'ok'})
    _fail_order(database, order.id, clock.now, 'issue')
    clock.tick()
    return order


def _steps(database, order_id):
    with database.reader() as session:
        return database.repositories.steps.for_order(session, order_id)


def _columns(step):
    """A step row's values, column by column."""
    return tuple(getattr(step, column.name)
                 for column in models.OrderStep.__table__.columns)


def test_the_plan_restarts_every_step_not_done_the_runnable_ones_first():
    fanout = order_types.get('fanout')
    plan = commands.restart_plan(fanout, dict(
        check_domains=CANCELLED, check_caa=DONE, check_key=FAILED,
        issue=CANCELLED, poll=WAITING, store=CANCELLED, notify=CANCELLED,
        **{'notify:1': DONE}))
    assert plan == commands.Restart(
        start=('check_domains', 'check_key'),
        wait=('issue', 'poll', 'store', 'notify'))
    # Parallel steps after the same one: both run again.
    plan = commands.restart_plan(fanout, dict(
        {name: DONE for name in CHECKS + ('issue', 'poll')},
        store=FAILED, notify=CANCELLED))
    assert plan == commands.Restart(start=('store', 'notify'),
                                    wait=())
    # A declared step the order has no row for is left out.
    assert commands.restart_plan(fanout, {'check_key': FAILED}) == \
        commands.Restart(start=('check_key',), wait=())
    assert commands.restart_plan(fanout, {
        name: DONE for name in fanout.names}) == commands.Restart(
            start=(), wait=())


def test_the_resumed_event_says_the_order_is_pending_again():
    assert events.resumed() == [events.Event(events.RESUMED,
                                             models.PENDING)]


def test_resume_runs_the_failed_step_again_and_keeps_the_done_ones(
        orders, database, client, clock):
    order = _failed_at_issue(orders, database, clock)
    before = _steps(database, order.id)
    client.casts.clear()

    resumed = orders.resume(order.id, project_id=PROJECT)

    assert (resumed.status, resumed.error_reason) == (api.PENDING, None)
    steps = _steps(database, order.id)
    for name in CHECKS:
        assert _columns(steps[name]) == _columns(before[name])
    issue = steps['issue']
    assert (issue.status, issue.generation, issue.attempt, issue.failures,
            issue.polls, issue.crashes, issue.last_error, issue.started_at,
            issue.finished_at, issue.output, issue.owner,
            issue.dispatched_at) == (
        models.STEP_PENDING, before['issue'].generation + 1, 0, 0, 0, 0,
        None, None, None, None, None, clock.now)
    for name in LATER:
        assert (steps[name].status, steps[name].generation,
                steps[name].last_error, steps[name].finished_at) == (
            WAITING, before[name].generation + 1, None, None)
    # Only issue is cast, under its new generation; no old retry row is
    # left to cast anything of the old one.
    assert client.casts == [('issue', {
        'order_id': order.id, 'generation': issue.generation})]
    with database.reader() as session:
        assert database.repositories.retry_tasks.list_tasks(
            session, order_id=order.id) == []
    assert {step.name: step.status for step in resumed.steps} == dict(
        {name: DONE for name in CHECKS}, issue='QUEUED',
        **{name: WAITING for name in LATER})


def test_resume_restarts_a_parallel_step_the_failure_cancelled(
        orders, database, client, clock):
    order = orders.create('fanout', {}, project_id=PROJECT)
    _run(database, order.id, 'check_caa', clock.now, DONE, {'caa': 'ok'})
    _fail_order(database, order.id, clock.now, 'check_key')
    client.casts.clear()

    orders.resume(order.id, all_projects=True)

    steps = _steps(database, order.id)
    assert {name: step.status for name, step in steps.items()} == dict(
        check_domains=models.STEP_PENDING, check_caa=DONE,
        check_key=models.STEP_PENDING,
        **{name: WAITING for name in ('issue',) + LATER})
    assert sorted(name for name, _ in client.casts) == ['check_domains',
                                                        'check_key']


def test_an_order_that_did_not_fail_is_not_resumable(
        orders, database, clock):
    pending = orders.create('fanout', {}, project_id=PROJECT)
    with pytest.raises(api.OrderNotResumable,
                       match='order %s is PENDING: only an ERROR order can '
                             'be resumed' % pending.id):
        orders.resume(pending.id, all_projects=True)
    cancelled = orders.create('certificate', {}, project_id=PROJECT)
    orders.cancel(cancelled.id, all_projects=True)
    with pytest.raises(api.OrderNotResumable, match='is CANCELLED'):
        orders.resume(cancelled.id, all_projects=True)
    cancelling = orders.create('fanout', {}, project_id=PROJECT)
    orders.cancel(cancelling.id, all_projects=True)
    with pytest.raises(api.OrderNotResumable, match='is CANCELLING'):
        orders.resume(cancelling.id, all_projects=True)
    with pytest.raises(api.OrderNotFound):
        orders.resume(pending.id, project_id='another')
    assert issubclass(api.OrderNotResumable, api.OrderAPIError)


def test_a_second_resume_of_a_resumed_order_is_refused_a_racing_one_not(
        orders, database, clock, monkeypatch):
    order = _failed_at_issue(orders, database, clock)
    orders.resume(order.id, all_projects=True)
    with pytest.raises(api.OrderNotResumable, match='is PENDING'):
        orders.resume(order.id, all_projects=True)

    # Two at once: both read it ERROR, one moves it first. The other
    # finds it PENDING in its transaction, writes nothing and returns it.
    again = _failed_at_issue(orders, database, clock)
    real = commands.resume

    def racing(database, *args, **kwargs):
        assert real(database, *args, **kwargs) is not None
        return real(database, *args, **kwargs)
    monkeypatch.setattr(commands, 'resume', racing)
    with fakes.log_lines('worker.api') as lines:
        assert orders.resume(again.id, all_projects=True).status == api.PENDING
    assert len(lines.about('resumed by another request first')) == 1
    assert lines.about('resumed by user') == []
    issue = _steps(database, again.id)['issue']
    assert issue.generation == 2      # moved on once: 1 (failed), 2


def test_a_resume_that_lost_a_race_at_commit_is_tried_again(
        orders, database, clock, monkeypatch):
    order = _failed_at_issue(orders, database, clock)
    fakes.lose_races(monkeypatch, database.repositories.steps, 'restart', 1)
    assert orders.resume(order.id, all_projects=True).status == api.PENDING
    assert _steps(database, order.id)['issue'].generation == 2


def test_resume_logs_who_with_the_orders_request_ids(
        orders, database, clock):
    created_by = context_module.RequestContext(
        global_request_id='req-6c1e9fd4-2f43-4bd3-9a8e-3f3f0e5c1d2b',
        overwrite=False)
    order = _failed_at_issue(orders, database, clock, context=created_by)
    operator = context_module.RequestContext(user_name='ops',
                                             overwrite=False)
    with fakes.log_lines('worker.api') as lines:
        orders.resume(order.id, context=operator, all_projects=True)
    [(message, _, logged, _)] = lines.about('resumed by')
    assert message == (
        'Order %s resumed by user ops (request %s) (it was ERROR: step '
        'issue failed); step(s) issue start again, then poll, store, '
        'notify' % (order.id, operator.request_id))
    assert (logged.request_id, logged.global_request_id) == (
        created_by.request_id, created_by.global_request_id)


def test_resume_sends_order_resumed_to_the_callback_urls(
        orders, database, client, clock):
    order = _failed_at_issue(orders, database, clock, callback_urls=[
        'https://hooks.example.org/a'])
    [delivery] = [name for name in _steps(database, order.id)
                  if models.is_delivery(name)]
    # The delivery sent everything so far and finished.
    with database.session() as session, session.begin():
        steps = database.repositories.steps
        generation = steps.for_order(session, order.id)[delivery].generation
        singular.claim(steps, session, order.id, delivery, generation,
                       clock.now, 'w@h',
                       clock.now + datetime.timedelta(seconds=9))
        singular.record_delivery(steps, session, order.id, delivery,
                                 generation + 1, clock.now, DONE, 4, 0)
    client.casts.clear()

    orders.resume(order.id, all_projects=True)

    with database.reader() as session:
        found = database.repositories.notifications.events_of_order(
            session, order.id)
    # (This test failed the order without its events.)
    assert [(event.event, event.status) for event in found] == [
        ('order.created', api.PENDING), ('order.resumed', api.PENDING)]
    # Woken to send it, with the restarted step.
    assert sorted(name for name, _ in client.casts) == ['issue', delivery]


def test_an_order_with_every_step_done_is_not_resumed(
        orders, database, clock):
    order = orders.create('certificate', {}, project_id=PROJECT)
    with database.session() as session, session.begin():
        database.repositories.orders.fail(session, order.id, clock.now, 'x')
        for name, step in database.repositories.steps.for_order(
                session, order.id).items():
            database.repositories.steps.restart(session, order.id, [name],
                                                [], clock.now)
            singular.finish(database.repositories.steps, session, order.id,
                            name, step.generation + 1, clock.now, DONE,
                            output={})
    with pytest.raises(api.OrderNotResumable, match='every step'):
        orders.resume(order.id, all_projects=True)
    assert orders.get(order.id, all_projects=True).status == api.ERROR


def test_resume_many_resumes_the_first_failed_of_a_type_and_project(
        orders, database, clock, monkeypatch):
    first = _failed_at_issue(orders, database, clock)
    second = _failed_at_issue(orders, database, clock)
    since = clock.now
    third = _failed_at_issue(orders, database, clock)
    elsewhere = orders.create('fanout', {}, project_id='other')
    _fail_order(database, elsewhere.id, clock.now, 'check_key')
    clock.tick()
    certificate = orders.create('certificate', {}, project_id=PROJECT)
    with database.session() as session, session.begin():
        database.repositories.orders.fail(session, certificate.id,
                                          clock.now, 'x')

    done = orders.resume_many(order_type='fanout', project_id=PROJECT,
                              limit=1)
    assert ([order.id for order in done.resumed], done.failed) == (
        [first.id], {})
    done = orders.resume_many(since=since, all_projects=True)
    assert [order.id for order in done.resumed] == [
        third.id, elsewhere.id, certificate.id]
    assert orders.resume_many(
        since=clock.now + datetime.timedelta(hours=1),
        all_projects=True).resumed == ()

    # One that cannot be resumed does not stop the others.
    failing = [_failed_at_issue(orders, database, clock) for _ in range(3)]
    real = commands.resume

    def broken(database, workflow, order_id, *args, **kwargs):
        if order_id == failing[1].id:
            raise RuntimeError('database went away')
        return real(database, workflow, order_id, *args, **kwargs)
    monkeypatch.setattr(commands, 'resume', broken)
    done = orders.resume_many(order_type='fanout', all_projects=True)
    assert [order.id for order in done.resumed] == [second.id, failing[0].id,
                                                    failing[2].id]
    assert done.failed == {failing[1].id: 'database went away'}


@pytest.mark.parametrize('arguments, message', [
    ({'limit': 0}, 'limit must be an integer from 1 to 1000'),
    ({'limit': 1001}, 'limit must be an integer from 1 to 1000'),
    ({'since': '2026-11-26'}, 'since must be a datetime'),
])
def test_resume_many_refuses_what_cannot_be_right(orders, arguments,
                                                  message):
    with pytest.raises(api.InvalidRequest, match=message):
        orders.resume_many(all_projects=True, **arguments)


def test_resume_many_takes_an_aware_time_as_utc(orders, database, clock):
    order = _failed_at_issue(orders, database, clock)
    zone = datetime.timezone(datetime.timedelta(hours=2))
    since = (clock.now + datetime.timedelta(hours=2)).replace(tzinfo=zone)
    assert orders.resume_many(since=since, all_projects=True).resumed == ()
    since = since - datetime.timedelta(seconds=5)
    assert [resumed.id for resumed in orders.resume_many(
        since=since, all_projects=True).resumed] == [order.id]


def test_create_cancel_and_resume_are_announced_after_they_commit(
        database, client, clock, conf):
    # What had been cast when each announcement was flushed.
    cast_at_flush = []
    announcer = fakes.RecordingAnnouncer(
        on_flush=lambda: cast_at_flush.append(
            {order_id for _, kwargs in client.casts
             for order_id in [kwargs.get('order_id')]}))
    orders = api.OrderAPI(database, conf, rpcapi.WorkerAPI(client),
                          now=lambda: clock.now, announcer=announcer)
    order = _failed_at_issue(orders, database, clock)
    # Announced before its steps were cast, so that a consumer sees
    # order.create before what a worker announces.
    assert order.id not in cast_at_flush[0]
    orders.resume(order.id, all_projects=True)
    with pytest.raises(api.OrderNotResumable):
        orders.resume(order.id, all_projects=True)
    cancelled = orders.create('certificate', {}, project_id=PROJECT)
    orders.cancel(cancelled.id, reason='not needed', all_projects=True)
    orders.cancel(cancelled.id, all_projects=True)
    # The ERROR was the worker's (not this API's) to announce.
    assert announcer.announced == [
        ('order.create', order.id, PROJECT, models.PENDING, None),
        ('order.resumed', order.id, PROJECT, models.PENDING, None),
        ('order.create', cancelled.id, PROJECT, models.PENDING, None),
        ('order.cancelled', cancelled.id, PROJECT, models.CANCELLED,
         'not needed')]


def test_resume_many_since_takes_the_failure_not_a_delivery_after_it(
        orders, database, clock):
    early = _failed_at_issue(orders, database, clock)
    since = clock.now
    late = _failed_at_issue(orders, database, clock)
    # early's events are delivered after late failed: the delivery holds
    # early's row (its updated_at) as it writes its result.
    with database.session() as session, session.begin():
        singular.lock_order(database.repositories.notifications, session,
                            early.id, clock.now)

    done = orders.resume_many(since=since, project_id=PROJECT)

    assert [order.id for order in done.resumed] == [late.id]


def _requests(orders, order_id):
    """The history's rows of cancels and resumes: ``(step, result, error,
    requested_by)``, oldest first."""
    return [(run.step, run.result, run.error, run.requested_by)
            for run in orders.history(order_id, all_projects=True)
            if run.result == models.RUN_REQUESTED]


def test_resume_records_who_asked_in_the_history(orders, database, clock):
    order = _failed_at_issue(orders, database, clock)
    caller = context_module.RequestContext(
        user_id='u-1', project_id=PROJECT, overwrite=False)
    orders.resume(order.id, project_id=PROJECT, context=caller,
                  requested_by=api.Requester.of_context(caller))
    assert _requests(orders, order.id) == [(
        models.RUN_RESUME, models.RUN_REQUESTED, None,
        {'actor': 'user', 'user_id': 'u-1', 'project_id': PROJECT,
         'request_id': caller.request_id, 'os_user': None})]
    [row] = [run for run in orders.history(order.id, project_id=PROJECT)
             if run.step == models.RUN_RESUME]
    # After the runs that failed: the history stays in the order it
    # happened.
    assert orders.history(order.id, project_id=PROJECT)[-1] == row
    assert (row.attempt, row.worker, row.finished_at) == (0, None, clock.now)


def test_resume_many_records_the_operator_on_each_order(
        orders, database, clock):
    first = _failed_at_issue(orders, database, clock)
    second = _failed_at_issue(orders, database, clock)
    operator = api.Requester.operator('ops@host-1', 'req-1')
    done = orders.resume_many(project_id=PROJECT, requested_by=operator)
    assert {order.id for order in done.resumed} == {first.id, second.id}
    for order in (first, second):
        assert _requests(orders, order.id) == [(
            models.RUN_RESUME, models.RUN_REQUESTED, None,
            {'actor': 'operator', 'user_id': None, 'project_id': None,
             'request_id': 'req-1', 'os_user': 'ops@host-1'})]


def test_a_resume_without_a_requester_is_recorded_without_one(
        orders, database, clock):
    order = _failed_at_issue(orders, database, clock)
    orders.resume(order.id, all_projects=True)
    assert _requests(orders, order.id) == [
        (models.RUN_RESUME, models.RUN_REQUESTED, None, None)]


def test_a_refused_resume_records_nothing(orders, database, clock):
    order = orders.create('fanout', {}, project_id=PROJECT)
    with pytest.raises(api.OrderNotResumable):
        orders.resume(order.id, all_projects=True,
                      requested_by=api.Requester.operator('ops@h'))
    assert _requests(orders, order.id) == []


def test_cancel_records_who_asked_and_its_reason(orders):
    order = orders.create('fanout', {}, project_id=PROJECT)
    orders.cancel(order.id, project_id=PROJECT, reason='not needed',
                  requested_by=api.Requester.operator('ops@h', 'req-2'))
    # Cancelling it again changes nothing: it is recorded once.
    orders.cancel(order.id, project_id=PROJECT,
                  requested_by=api.Requester.operator('ops@h', 'req-3'))
    assert _requests(orders, order.id) == [(
        models.RUN_CANCEL, models.RUN_REQUESTED, 'not needed',
        {'actor': 'operator', 'user_id': None, 'project_id': None,
         'request_id': 'req-2', 'os_user': 'ops@h'})]


@pytest.mark.parametrize('requested_by', [
    'ops@h', {'actor': 'operator'},
    api.Requester(actor=''), api.Requester(actor='user', user_id='u' * 256),
    api.Requester(actor='user', request_id='req\n-1')])
def test_a_requester_that_is_not_one_is_refused(orders, requested_by):
    order = orders.create('fanout', {}, project_id=PROJECT)
    with pytest.raises(api.InvalidRequest):
        orders.cancel(order.id, project_id=PROJECT,
                      requested_by=requested_by)
    with pytest.raises(api.InvalidRequest):
        orders.resume(order.id, project_id=PROJECT,
                      requested_by=requested_by)
    assert orders.get(order.id, project_id=PROJECT).status == api.PENDING
