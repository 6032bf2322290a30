"""The worker's step logic against the in-memory database: claim a step,
run it, apply its answer, all fenced by the step's own token.

``tests/functional/test_worker_steps.py`` runs steps on the real
databases; these are the quick ones to run on every save.
"""

import dataclasses
import datetime
import threading
import time

from oslo_context import context as oslo_context
import pytest

from tests import config
from tests import fakes
from tests import singular
from worker.api import casts
from worker.api import commands
from worker import context
from worker.db import memory
from worker.db import models
from worker.db import orders
from worker import manager
from worker import order_types
from worker.order_types import base as types_base
from worker.order_types import certificate
from worker.order_types import fanout
from worker.plugins import base
from worker import policy
from worker import rpcapi
from worker import values

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)
OWNER = '1@worker-host'
REQUEST = 'process_type_order'
CHECK = 'check_certificate_status'
ROOTS = ('check_domains', 'check_caa', 'check_key')


def _seconds(value):
    return datetime.timedelta(seconds=value)


class ScriptedPlugin(base.CertificatePluginBase):
    """Answers each call with the next of ``answers`` (an exception is
    raised); records the views it was given."""

    def __init__(self, *answers, during=None):
        self._answers = list(answers)
        self._during = during
        self.views = []

    def _answer(self, order):
        self.views.append(order)
        if self._during is not None:
            self._during(order)
        answer = self._answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    issue_certificate_request = check_certificate_status = _answer


class Script:
    """What the steps of the ``scripted`` order type answer, run by run.

    :param answers: ``{step: [answer, ...]}``, one answer per run (an
        exception is raised).
    :param during: called with each view before its step answers.
    """

    def __init__(self, during=None, **answers):
        self._answers = {name: list(steps) for name, steps in answers.items()}
        self._during = during
        self.views = []

    def answer(self, view):
        """Record ``view``; return (or raise) its step's next answer."""
        self.views.append(view)
        if self._during is not None:
            self._during(view)
        answer = self._answers[view.step].pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def _scripted_workflow(script, step_policy):
    """The ``scripted`` order type: ``first``, then ``second``."""

    class ScriptedOrder(types_base.OrderType):
        """Two steps in a row, both with ``step_policy``."""

        steps = (
            types_base.Step('first', policy=step_policy),
            types_base.Step('second', after=('first',), policy=step_policy),
        )

        def first(self, order):
            return script.answer(order)

        def second(self, order):
            return script.answer(order)

    return types_base.check('scripted', ScriptedOrder)


# Predictable delays: 1 s, 2 s, 4 s ...
STEADY = policy.StepPolicy(jitter=False, backoff_base_seconds=1.0)


@pytest.fixture
def install(monkeypatch):
    """Returns ``install(script, step_policy)``: the ``scripted`` order
    type is installed beside the real ones, for this test only.

    Install it before building the configuration: its option groups are
    registered with the others.
    """
    def install(script, step_policy=STEADY):
        workflows = dict(order_types.installed(),
                         scripted=_scripted_workflow(script, step_policy))
        monkeypatch.setattr(order_types, 'installed', lambda: workflows)
    return install


@pytest.fixture
def use_plugin(monkeypatch):
    """Returns ``use(plugin)``: certificate orders run over ``plugin``."""
    def use(plugin):
        monkeypatch.setattr(certificate.CertificateOrder, 'build',
                            classmethod(lambda cls, conf: cls(plugin)))
        return plugin
    return use


@pytest.fixture
def database():
    return memory.InMemoryDatabase()


@dataclasses.dataclass
class Worker:
    """A worker manager, the fake client it casts ready steps to and the
    results it reported."""

    manager: manager.WorkerManager
    client: fakes.RecordingRPCClient
    observed: list

    def run(self, name, order_id, generation):
        """Deliver a message of one step."""
        self.manager.run_steps({}, [[name, order_id, generation]])

    def deliver(self):
        """Deliver every message cast so far, and those they cast, as a
        broker would; returns the steps of the messages delivered."""
        delivered = []
        while self.client.messages:
            ctxt, kwargs = self.client.delivered()
            delivered.append(kwargs['steps'])
            self.manager.run_steps(ctxt, kwargs['steps'])
        return delivered


def _worker(database, step_concurrency=1, announcer=None, **overrides):
    client, observed = fakes.RecordingRPCClient(), []
    return Worker(manager.WorkerManager(
        config.make_conf(**overrides), database, OWNER,
        worker_api=rpcapi.WorkerAPI(client), clock=lambda: NOW,
        observe_result=observed.append, step_concurrency=step_concurrency,
        announcer=announcer), client, observed)


def _order(database, type_name='certificate', meta=None, priority=0,
           origin=orders.NO_ORIGIN):
    with database.session() as session, session.begin():
        return database.repositories.orders.create(
            session, order_types.get(type_name), meta or {}, NOW,
            priority=priority, origin=origin).id


@dataclasses.dataclass(frozen=True)
class State:
    """An order, ``{name: step}`` of its steps, and its retry rows."""

    order: object
    steps: dict
    retries: list

    def token(self, name):
        """The current token of step ``name``."""
        return self.steps[name].generation


def _state(database, order_id):
    with database.reader() as session, session.begin():
        repos = database.repositories
        return State(repos.orders.get(session, order_id),
                     repos.steps.for_order(session, order_id),
                     repos.retry_tasks.list_tasks(session, order_id=order_id))


def _statuses(state):
    return {name: step.status for name, step in state.steps.items()}


def _history(database, order_id):
    """The order's history: ``(step, attempt, worker, result, error)`` of
    each run, oldest first; every run started and ended at ``NOW``."""
    with database.reader() as session, session.begin():
        runs = database.repositories.history.for_order(session, order_id)
    assert all((run.started_at, run.finished_at) == (NOW, NOW)
               for run in runs)
    return [(run.step, run.attempt, run.worker, run.result, run.error)
            for run in runs]


# The certificate order type, over a scripted plugin.

def test_completed_makes_the_order_active_and_merges_its_meta(
        database, use_plugin):
    order_id = _order(database, meta={'domain': 'example.org'})
    plugin = use_plugin(ScriptedPlugin(
        base.Completed(meta={'certificate': 'pem'})))
    worker = _worker(database)

    worker.run(REQUEST, order_id, 0)

    state = _state(database, order_id)
    assert state.order.status == models.PENDING and state.retries == []
    request = state.steps[REQUEST]
    assert (request.status, request.generation, request.owner,
            request.attempt) == (models.STEP_DONE, 1, None, 1)
    # The status check is ready: cast with its own token, not yet run.
    assert worker.client.casts == [(CHECK, {'order_id': order_id,
                                            'generation': 0})]
    assert state.steps[CHECK].dispatched_at == NOW
    # The plugin saw the order under the step's new token, read-only.
    [view] = plugin.views
    assert (view.token, view.step, view.attempt) == (1, REQUEST, 0)
    assert view.meta['domain'] == 'example.org'
    with pytest.raises(TypeError):
        view.meta['domain'] = 'other'

    worker.deliver()

    state = _state(database, order_id)
    assert state.order.status == models.ACTIVE and state.retries == []
    assert state.order.meta == {'domain': 'example.org',
                                'certificate': 'pem',
                                'issued_on_request': True}
    assert _statuses(state) == {REQUEST: models.STEP_DONE,
                                CHECK: models.STEP_DONE}
    assert worker.observed == ['done', 'active']
    assert _history(database, order_id) == [
        (REQUEST, 1, OWNER, models.RUN_DONE, None),
        (CHECK, 1, OWNER, models.RUN_DONE, None)]


def test_a_stale_or_duplicate_message_runs_nothing(database, use_plugin):
    order_id = _order(database)
    plugin = use_plugin(ScriptedPlugin(base.RetryLater(5, CHECK)))
    worker = _worker(database)
    worker.run(REQUEST, order_id, 0)
    before = _state(database, order_id)

    worker.run(REQUEST, order_id, 0)            # duplicate
    worker.run(REQUEST, order_id, 1)            # the step is DONE
    worker.run(CHECK, order_id, 7)              # future token
    worker.run('format_hard_disk', order_id, 0)  # no such step
    worker.run(CHECK, 'no-such-order', 0)

    assert len(plugin.views) == 1
    assert _state(database, order_id) == before
    assert worker.observed == ['done'] + ['stale'] * 5


def test_a_request_issued_later_starts_its_check_after_the_delay(
        database, use_plugin):
    order_id = _order(database)
    use_plugin(ScriptedPlugin(base.RetryLater(5, CHECK)))
    worker = _worker(database)

    worker.run(REQUEST, order_id, 0)

    state = _state(database, order_id)
    assert _statuses(state) == {REQUEST: models.STEP_DONE,
                                CHECK: models.STEP_PENDING}
    # Waiting for its row, not in flight: nothing cast.
    assert state.steps[CHECK].dispatched_at is None
    assert worker.client.casts == []
    [retry] = state.retries
    assert retry.retry_task == CHECK
    assert retry.retry_at == NOW + _seconds(5)
    assert (retry.retry_args, retry.retry_kwargs) == (
        '["%s"]' % order_id, '{"generation": 0}')


def test_retry_later_polls_the_step_with_its_new_token(database,
                                                       use_plugin):
    order_id = _order(database, priority=7)
    use_plugin(ScriptedPlugin(base.RetryLater(5)))

    _worker(database).run(REQUEST, order_id, 0)

    state = _state(database, order_id)
    request = state.steps[REQUEST]
    assert (request.status, request.generation, request.polls,
            request.failures, request.owner) == (models.STEP_PENDING, 1, 1,
                                                 0, None)
    [retry] = state.retries
    # The row carries its order's priority, which orders the due rows.
    assert (retry.retry_task, retry.retry_at, retry.retry_kwargs,
            retry.retry_count, retry.priority) == (
                REQUEST, NOW + _seconds(5), '{"generation": 1}', 0, 7)


def test_an_unavailable_remote_backs_off_then_fails_the_order(
        database, use_plugin):
    order_id = _order(database)
    unavailable = base.RemoteUnavailable('CA down')
    use_plugin(ScriptedPlugin(unavailable, unavailable, unavailable))
    # The options of the release before step policies still apply.
    worker = _worker(database,
                     **{'worker.max_unavailable_retries': 2,
                        'worker.unavailable_backoff_base_seconds': 2.0,
                        'worker.unavailable_backoff_max_seconds': 600.0})

    delays = []
    for generation in (0, 1):
        worker.run(REQUEST, order_id, generation)
        state = _state(database, order_id)
        [retry] = state.retries
        assert state.steps[REQUEST].failures == generation + 1
        assert retry.retry_count == generation + 1
        delays.append((retry.retry_at - NOW).total_seconds())
    worker.run(REQUEST, order_id, 2)

    state = _state(database, order_id)
    assert state.order.status == models.ERROR and state.retries == []
    assert state.order.error_reason == (
        'step process_type_order gave up after 3 attempts; last error: '
        'remote service unavailable: CA down')
    assert _statuses(state) == {REQUEST: models.STEP_FAILED,
                                CHECK: models.STEP_CANCELLED}
    # Exponential with equal jitter: half fixed, half random, capped.
    assert 1 <= delays[0] <= 2 and 2 <= delays[1] <= 4
    assert worker.observed == ['retry', 'retry', 'error']
    down = 'remote service unavailable: CA down'
    assert _history(database, order_id) == [
        (REQUEST, 1, OWNER, models.RUN_RETRY, down),
        (REQUEST, 2, OWNER, models.RUN_RETRY, down),
        (REQUEST, 3, OWNER, models.RUN_FAILED,
         'gave up after 3 attempts; last error: ' + down)]


def _crash(database, order_id, times):
    """Claim the order's first step and take it back ``times`` times,
    as the retry daemon does when its owner died; the step's generation.
    """
    repos = database.repositories
    generation = 0
    for _ in range(times):
        with database.session() as session, session.begin():
            assert singular.claim(repos.steps, session, order_id, REQUEST,
                                  generation, NOW, 'dead@host',
                                  NOW + _seconds(60))
            assert repos.steps.take_back(session, order_id, REQUEST,
                                         generation + 1, NOW, crashed=True)
        generation += 2
    return generation


@pytest.mark.parametrize('crashes, runs', [(1, True), (2, False)])
def test_a_step_whose_worker_died_max_step_crashes_times_is_not_run_again(
        database, use_plugin, crashes, runs):
    order_id = _order(database)
    plugin = ScriptedPlugin(base.RetryLater(delay_seconds=5))
    use_plugin(plugin)
    generation = _crash(database, order_id, crashes)

    _worker(database, **{'worker.max_step_crashes': 2}).run(
        REQUEST, order_id, generation)

    state = _state(database, order_id)
    assert len(plugin.views) == int(runs)
    if runs:
        # It ran to its end: the deaths in a row are over.
        assert state.order.status == models.PENDING
        assert state.steps[REQUEST].crashes == 0
        return
    assert state.order.status == models.ERROR
    assert state.order.error_reason == (
        'step process_type_order gave up: the worker died 2 times while '
        'running this step')
    assert state.steps[REQUEST].status == models.STEP_FAILED


def test_a_step_that_crashed_runs_only_once_its_neighbours_ended(
        database, use_plugin):
    # Were it a poison step again, it would take no neighbour with it.
    neighbour, suspect = _order(database), _order(database)
    generation = _crash(database, suspect, 1)
    spans, suspect_started = {}, threading.Event()

    def during(view):
        spans[view.id] = [time.monotonic()]
        if view.id == suspect:
            suspect_started.set()
        else:
            # Beside the suspect (without isolation) it would see it
            # start: step_concurrency is 2.
            suspect_started.wait(1.0)
        spans[view.id].append(time.monotonic())
    plugin = ScriptedPlugin(*[base.RetryLater(delay_seconds=5)] * 2,
                            during=during)
    use_plugin(plugin)

    _worker(database, step_concurrency=2).manager.run_steps(
        {}, [[REQUEST, neighbour, 0], [REQUEST, suspect, generation]])

    assert sorted(spans) == sorted([neighbour, suspect])
    first, second = sorted(spans.values())
    assert first[1] <= second[0]
    # Both ran to their end: the suspect's deaths in a row are over.
    for order_id in (neighbour, suspect):
        assert _state(database, order_id).steps[REQUEST].crashes == 0


def test_a_process_claims_one_step_that_crashed_at_a_time(
        database, use_plugin):
    # Two suspects claimed together would die together, were one poison.
    first, second = _order(database), _order(database)
    tokens = {order_id: _crash(database, order_id, 1)
              for order_id in (first, second)}
    plugin = use_plugin(ScriptedPlugin(*[base.RetryLater(5)] * 2))
    worker = _worker(database, step_concurrency=2, report_interval=7)
    steps = {order_id: values.StepRef(REQUEST, order_id, tokens[order_id])
             for order_id in (first, second)}

    claimed = worker.manager._claimer.claim_batch(list(steps.values()))

    assert claimed[0][0].order_id == first and claimed[1] is None
    waited = _state(database, second)
    # Not claimed: its token unchanged, its crash kept, no run to die.
    assert (waited.steps[REQUEST].generation, waited.steps[REQUEST].owner,
            waited.steps[REQUEST].crashes) == (tokens[second], None, 1)
    [retry] = waited.retries
    assert retry.retry_at == NOW + _seconds(7)
    assert worker.observed == ['waiting']

    # Cast again while the first has not run: refused again.
    worker.run(REQUEST, second, tokens[second])
    assert _state(database, second).steps[REQUEST].owner is None
    assert worker.observed == ['waiting'] * 2 and plugin.views == []

    # Once the first ran (in a step thread, which holds a count), the
    # second is claimed and runs.
    run, view = claimed[0]
    with worker.manager._isolation.held():
        runner = worker.manager._runner
        runner._go_on(runner._run_apply(steps[first], run, view, None))
    worker.run(REQUEST, second, tokens[second])
    assert [view.id for view in plugin.views] == [first, second]
    assert worker.observed == ['waiting'] * 2 + ['retry'] * 2


def test_a_run_extends_its_lease_until_it_no_longer_holds_its_step(
        database, use_plugin):
    order_id = _order(database)
    leases = []

    def extend(view):
        view.extend_lease(3600)
        leases.append(_state(database, order_id).steps[REQUEST])
        with database.session() as session, session.begin():
            # The retry daemon takes the step back meanwhile.
            assert database.repositories.steps.take_back(
                session, order_id, REQUEST, view.token, NOW)
        with pytest.raises(base.LeaseLost, match='no longer held'):
            view.extend_lease(3600)
    use_plugin(ScriptedPlugin(base.RetryLater(delay_seconds=5),
                              during=extend))

    worker = _worker(database)
    worker.run(REQUEST, order_id, 0)

    [held] = leases
    assert (held.owner, held.lease_expires_at) == (OWNER,
                                                   NOW + _seconds(3600))
    # The run's result was discarded: the step is the retry daemon's.
    assert worker.observed == ['superseded']
    assert _state(database, order_id).steps[REQUEST].generation == 2


def test_a_plugin_that_raises_fails_its_order(database, use_plugin):
    order_id = _order(database)
    use_plugin(ScriptedPlugin(RuntimeError('boom')))

    _worker(database).run(REQUEST, order_id, 0)

    state = _state(database, order_id)
    assert state.order.status == models.ERROR
    assert state.order.error_reason == (
        'step process_type_order failed after 1 attempt(s): '
        'RuntimeError: boom')
    assert state.steps[REQUEST].last_error == 'RuntimeError: boom'


def test_the_results_that_end_an_order_are_announced(database, use_plugin):
    announcer = fakes.RecordingAnnouncer()
    active = _order(database)
    failed = _order(database)
    use_plugin(ScriptedPlugin(base.Completed(meta={'certificate': 'pem'})))
    worker = _worker(database, announcer=announcer)
    worker.run(REQUEST, active, 0)
    # A step's result that does not end the order announces nothing.
    assert announcer.announced == []
    worker.deliver()
    use_plugin(ScriptedPlugin(RuntimeError('boom')))
    worker.run(REQUEST, failed, 0)
    assert announcer.announced == [
        ('order.active', active, models.DEFAULT_PROJECT, models.ACTIVE,
         None),
        ('order.error', failed, models.DEFAULT_PROJECT, models.ERROR,
         _state(database, failed).order.error_reason)]


def test_a_result_overtaken_while_the_step_ran_is_discarded(database,
                                                            use_plugin):
    order_id = _order(database)

    def taken_back(view):
        # The scheduler takes the step back while the plugin runs.
        with database.session() as session, session.begin():
            assert database.repositories.steps.take_back(
                session, order_id, REQUEST, view.token, NOW)
    use_plugin(ScriptedPlugin(base.Completed(), during=taken_back))
    worker = _worker(database)

    worker.run(REQUEST, order_id, 0)

    state = _state(database, order_id)
    assert state.order.status == models.PENDING
    assert (state.steps[REQUEST].status, state.token(REQUEST)) == (
        models.STEP_PENDING, 2)
    assert state.steps[CHECK].status == models.STEP_WAITING
    assert state.retries == [] and worker.client.casts == []
    assert worker.observed == ['superseded']
    assert _history(database, order_id) == [
        (REQUEST, 1, OWNER, models.RUN_SUPERSEDED, None)]


def test_run_steps_drops_malformed_and_stale_steps_and_runs_the_rest(
        database, use_plugin):
    current, stale = _order(database), _order(database)
    plugin = use_plugin(ScriptedPlugin(base.Completed()))
    worker = _worker(database)

    worker.manager.run_steps({}, [
        [REQUEST, current, 0],
        [REQUEST, stale, 5],
        ['format_hard_disk', current, 0],
        [REQUEST, current, True],
        [REQUEST],
        'garbage',
    ])

    assert [view.id for view in plugin.views] == [current]
    assert _state(database, current).steps[REQUEST].status == \
        models.STEP_DONE
    assert _state(database, stale).token(REQUEST) == 0


def test_a_stopping_worker_claims_none_of_the_steps_left_in_a_message(
        database, use_plugin):
    """Steps wait in their message until a step thread is free; once the
    service stops, those still waiting are never claimed (the retry daemon
    dispatches them again), and the message returns."""
    running, release = threading.Event(), threading.Event()

    def hold(view):
        running.set()
        assert release.wait(10)
    use_plugin(ScriptedPlugin(*[base.Completed()] * 3, during=hold))
    worker = _worker(database, step_concurrency=1)
    order_ids = [_order(database) for _ in range(3)]
    raised = []

    def deliver():
        try:
            worker.manager.run_steps({}, [[REQUEST, order_id, 0]
                                          for order_id in order_ids])
        except Exception as exc:
            raised.append(exc)
    message = threading.Thread(target=deliver)
    message.start()
    assert running.wait(10)

    worker.manager.cancel_queued_steps()
    release.set()
    message.join(10)

    assert not message.is_alive() and raised == []
    assert _statuses(_state(database, order_ids[0]))[REQUEST] == \
        models.STEP_DONE
    for order_id in order_ids[1:]:
        step = _state(database, order_id).steps[REQUEST]
        assert (step.status, step.generation, step.owner) == (
            models.STEP_PENDING, 0, None)


def test_a_message_of_more_steps_than_any_sender_puts_is_dropped_whole(
        database, use_plugin, caplog):
    order_id = _order(database)
    plugin = use_plugin(ScriptedPlugin(base.Completed()))
    worker = _worker(database)

    worker.manager.run_steps({}, [[REQUEST, order_id, 0]] * 501)

    assert plugin.views == []
    assert caplog.text.count('Dropped a message of 501 steps') == 1
    assert _state(database, order_id).token(REQUEST) == 0


def test_malformed_steps_are_logged_in_one_line_of_bounded_length(
        database, caplog):
    worker = _worker(database)

    worker.manager.run_steps({}, [['x' * 100000, 1, 'no']] * 300)

    [line] = [record.getMessage() for record in caplog.records
              if 'malformed' in record.getMessage()]
    assert line.startswith('Dropped 300 malformed step(s) of a message')
    assert len(line) < 400


def test_a_result_the_database_refused_is_written_once_it_answers(
        database, use_plugin):
    order_id = _order(database)
    use_plugin(ScriptedPlugin(base.Completed()))
    worker = _worker(database)
    session = database.session
    refusing = []

    def down_after_the_claim():
        # The claim's session goes through; the apply's finds the
        # database gone.
        if refusing:
            raise RuntimeError('database gone')
        refusing.append(True)
        return session()
    database.session = down_after_the_claim

    worker.run(REQUEST, order_id, 0)

    request = _state(database, order_id).steps[REQUEST]
    assert (request.status, request.owner) == (models.STEP_PENDING, OWNER)
    worker.manager.apply_deferred_results()          # still down: kept
    database.session = session
    worker.manager.apply_deferred_results()
    request = _state(database, order_id).steps[REQUEST]
    assert (request.status, request.owner) == (models.STEP_DONE, None)
    worker.manager.apply_deferred_results()          # written once only
    assert _state(database, order_id).steps[REQUEST].status == \
        models.STEP_DONE
    assert worker.observed == ['done']
    assert len(worker.client.casts) == 1
    assert _history(database, order_id) == [
        (REQUEST, 1, OWNER, models.RUN_DONE, None)]


def test_claims_and_results_that_lose_a_race_are_run_again(
        database, use_plugin, monkeypatch):
    # As a Galera node refuses a write set at COMMIT when another node
    # wrote the same rows first: each transaction wrote, then is refused
    # once, rolled back whole and run again.
    order_id = _order(database)
    use_plugin(ScriptedPlugin(base.Completed()))
    worker = _worker(database)
    repos = database.repositories
    for name in ('claim_many', 'finish_many'):
        fakes.lose_races(monkeypatch, repos.steps, name, 1)

    worker.run(REQUEST, order_id, 0)

    request = _state(database, order_id).steps[REQUEST]
    # Claimed once (token 1, not 2), finished once, its next step cast.
    assert (request.status, request.generation, request.attempt) == (
        models.STEP_DONE, 1, 1)
    assert worker.observed == ['done']
    assert worker.client.casts == [(CHECK, {'order_id': order_id,
                                            'generation': 0})]
    assert _history(database, order_id) == [
        (REQUEST, 1, OWNER, models.RUN_DONE, None)]


# The fanout order type: steps in parallel.

def test_parallel_steps_claim_separately_and_the_join_waits_for_all(
        database):
    order_id = _order(database, 'fanout')
    worker = _worker(database, step_concurrency=2,
                     **{'fanout.poll_interval_seconds': 0.0})

    worker.manager.run_steps({}, [[ROOTS[0], order_id, 0],
                                  [ROOTS[1], order_id, 0]])

    state = _state(database, order_id)
    for name in ROOTS[:2]:
        step = state.steps[name]
        assert (step.status, step.generation, step.attempt, step.owner,
                step.started_at) == (models.STEP_DONE, 1, 1, None, NOW)
    # The third check has not run: its token and claim are its own.
    assert (state.steps[ROOTS[2]].status, state.token(ROOTS[2])) == (
        models.STEP_PENDING, 0)
    assert state.steps['issue'].status == models.STEP_WAITING
    assert worker.client.casts == [] and worker.observed == ['done'] * 2

    worker.run(ROOTS[2], order_id, 0)

    assert _state(database, order_id).steps['issue'].status == \
        models.STEP_PENDING
    assert worker.client.messages == [
        ('run_steps', rpcapi.RUN_STEPS_VERSION,
         {'steps': [['issue', order_id, 0]]})]

    delivered = worker.deliver()

    # The two steps after the poll go out together.
    assert delivered == [[['issue', order_id, 0]], [['poll', order_id, 0]],
                         [['store', order_id, 0], ['notify', order_id, 0]]]
    state = _state(database, order_id)
    assert state.order.status == models.ACTIVE and state.retries == []
    assert set(_statuses(state).values()) == {models.STEP_DONE}
    assert state.order.meta == {
        'domains_checked': 'ok', 'caa_checked': 'ok', 'key_checked': 'ok',
        'request': base.idempotency_key(order_id, 'issue'),
        'certificate': 'fanout-%s' % order_id, 'stored': 'ok',
        'notified': 'ok'}
    assert worker.observed == ['done'] * 6 + ['active']


def test_a_result_after_the_order_was_cancelled_is_discarded(
        sqlite_database, monkeypatch):
    # SQLite: cancelling is the API's write (``worker.db.queries``).
    database = sqlite_database
    order_id = _order(database, 'fanout')
    worker = _worker(database)

    def cancelled_meanwhile(self, view):
        # An operator cancels the order while the check runs.
        cancelled = commands.cancel(database, order_types.get('fanout'),
                                    order_id, 'operator', NOW)
        assert cancelled
        casts.cast_steps(rpcapi.WorkerAPI(worker.client), cancelled.to_cast)
        return base.Completed({'domains_checked': 'ok'})
    monkeypatch.setattr(fanout.FanoutOrder, 'check_domains',
                        cancelled_meanwhile)

    worker.run(ROOTS[0], order_id, 0)

    state = _state(database, order_id)
    assert worker.observed == ['superseded']
    assert (state.order.status, state.order.error_reason) == (
        models.CANCELLING, 'operator')
    step = state.steps[ROOTS[0]]
    assert (step.status, step.generation, step.output, step.last_error) == (
        models.STEP_CANCELLED, 2, None, 'order cancelled')
    # Only the compensation runs: it was cast by the cancellation.
    assert worker.client.casts == [('revoke', {'order_id': order_id,
                                               'generation': 0})]

    worker.deliver()

    state = _state(database, order_id)
    assert (state.order.status, state.order.error_reason) == (
        models.CANCELLED, 'operator')
    assert state.steps['revoke'].output == {'revoked': False}
    assert worker.observed == ['superseded', 'cancelled']
    # The check's result was decided under the order's lock, and found
    # it no longer live.
    assert _history(database, order_id) == [
        (models.RUN_CANCEL, 0, None, models.RUN_REQUESTED, 'operator'),
        (ROOTS[0], 1, OWNER, models.RUN_SUPERSEDED, None),
        ('revoke', 1, OWNER, models.RUN_DONE, None)]


# Step policies, on a small order type of this module.

def _run_first(worker, database, order_id, runs):
    """Deliver step ``first`` ``runs`` times, each with its current token.
    """
    for _ in range(runs):
        worker.run('first', order_id,
                   _state(database, order_id).token('first'))


def test_a_step_whose_policy_runs_out_ends_the_order_naming_it(database,
                                                               install):
    down = base.RemoteUnavailable('CA down')
    install(Script(first=[down, down, down]),
            dataclasses.replace(STEADY, max_attempts=3))
    order_id = _order(database, 'scripted')
    worker = _worker(database)

    delays = []
    for failures in (1, 2):
        _run_first(worker, database, order_id, 1)
        state = _state(database, order_id)
        [retry] = state.retries
        assert (state.steps['first'].failures, retry.retry_count) == (
            failures, failures)
        delays.append((retry.retry_at - NOW).total_seconds())
    _run_first(worker, database, order_id, 1)

    assert delays == [1.0, 2.0]
    state = _state(database, order_id)
    assert state.order.status == models.ERROR and state.retries == []
    assert state.order.error_reason == (
        'step first gave up after 3 attempts; last error: remote service '
        'unavailable: CA down')
    first, second = state.steps['first'], state.steps['second']
    assert (first.status, first.attempt) == (models.STEP_FAILED, 3)
    assert (second.status, second.last_error) == (
        models.STEP_CANCELLED, 'order failed at step first')
    assert worker.observed == ['retry', 'retry', 'error']


@pytest.mark.parametrize('asked, waited', [(3600, 30), (7, 7), (-5, 0)])
def test_a_delay_the_remote_asks_for_is_bounded_by_the_policy(
        database, install, asked, waited):
    install(Script(first=[base.RemoteUnavailable(
        'busy', retry_after_seconds=asked)]),
        dataclasses.replace(STEADY, backoff_max_seconds=30.0, jitter=True))
    order_id = _order(database, 'scripted')

    _worker(database).run('first', order_id, 0)

    [retry] = _state(database, order_id).retries
    assert retry.retry_at == NOW + _seconds(waited)


@pytest.mark.parametrize('retry_on, never_retry, retried', [
    (('*',), (), True),
    (('ValueError',), (), True),
    (('builtins.ValueError',), (), True),
    (('Exception',), (), True),          # a base class matches too
    ((), (), False),
    (('KeyError',), (), False),
    (('*',), ('ValueError',), False),
])
def test_an_unexpected_exception_retries_only_if_the_policy_says_so(
        database, install, retry_on, never_retry, retried):
    install(Script(first=[ValueError('bad')]), dataclasses.replace(
        STEADY, retry_on=retry_on, never_retry=never_retry))
    order_id = _order(database, 'scripted')
    worker = _worker(database)

    worker.run('first', order_id, 0)

    state = _state(database, order_id)
    first = state.steps['first']
    if retried:
        assert state.order.status == models.PENDING
        assert (first.status, first.failures, first.last_error) == (
            models.STEP_PENDING, 1, 'ValueError: bad')
        [retry] = state.retries
        assert (retry.retry_task, retry.retry_at) == ('first',
                                                      NOW + _seconds(1))
        assert worker.observed == ['retry']
    else:
        assert state.order.status == models.ERROR and state.retries == []
        assert state.order.error_reason == (
            'step first failed after 1 attempt(s): ValueError: bad')
        assert first.status == models.STEP_FAILED
        assert worker.observed == ['error']


def test_polling_beyond_max_polls_gives_up(database, install):
    install(Script(first=[base.RetryLater(5)] * 3),
            dataclasses.replace(STEADY, max_polls=2))
    order_id = _order(database, 'scripted')
    worker = _worker(database)

    for polls in (1, 2):
        _run_first(worker, database, order_id, 1)
        state = _state(database, order_id)
        [retry] = state.retries
        assert (state.steps['first'].polls, state.steps['first'].failures,
                retry.retry_at, retry.retry_count) == (
            polls, 0, NOW + _seconds(5), 0)
    _run_first(worker, database, order_id, 1)

    state = _state(database, order_id)
    assert state.order.status == models.ERROR and state.retries == []
    assert state.order.error_reason == (
        'step first still not done after 2 polls (max_polls)')
    assert worker.observed == ['retry', 'retry', 'error']


def test_a_step_has_one_idempotency_key_for_all_its_runs(database,
                                                         install):
    down = base.RemoteUnavailable('down')
    script = Script(first=[down, base.Completed(), down],
                    second=[base.Completed()])
    install(script)
    order_id, other_id = _order(database, 'scripted'), \
        _order(database, 'scripted')
    worker = _worker(database)

    _run_first(worker, database, order_id, 2)
    worker.deliver()
    worker.run('first', other_id, 0)

    first, again, second, other = script.views
    assert (first.step, again.step, second.step) == ('first', 'first',
                                                     'second')
    # The token changes with every run; the key does not.
    assert (first.token, again.token, again.attempt) == (1, 2, 1)
    assert first.idempotency_key == again.idempotency_key == \
        base.idempotency_key(order_id, 'first')
    assert second.idempotency_key == \
        base.idempotency_key(order_id, 'second')
    assert len({first.idempotency_key, second.idempotency_key,
                other.idempotency_key}) == 3
    assert second.idempotency_key_of('first') == first.idempotency_key


# Claims and results written in batches (worker.common.group_commit hands the
# manager whatever reached the database together; called directly here,
# so that the batch is known).

def _checks_pending(database, worker, count):
    """``count`` certificate orders whose status check is PENDING."""
    order_ids = [_order(database) for _ in range(count)]
    for order_id in order_ids:
        worker.run(REQUEST, order_id, 0)
    return order_ids


def test_a_batch_claims_each_current_step_once(database, use_plugin):
    use_plugin(ScriptedPlugin(*[base.Completed()] * 3))
    worker = _worker(database)
    current, other = _checks_pending(database, worker, 2)

    claimed = worker.manager._claimer.claim_batch([
        values.StepRef(CHECK, current, 0), values.StepRef(CHECK, current, 0),
        values.StepRef(CHECK, other, 3), values.StepRef(REQUEST, other, 0)])

    # The duplicate in the batch, the future token and the finished step
    # claim nothing.
    run, view = claimed[0]
    assert claimed[1:] == [None, None, None]
    assert (run.order_id, run.step, run.token, view.token) == (
        current, CHECK, 1, 1)
    assert _state(database, current).steps[CHECK].owner == OWNER
    assert _state(database, other).steps[CHECK].generation == 0
    assert worker.observed[-3:] == ['stale'] * 3


def test_a_result_superseded_after_a_write_costs_only_itself(database,
                                                             use_plugin):
    use_plugin(ScriptedPlugin(*[base.Completed()] * 3))
    worker = _worker(database)
    order_ids = _checks_pending(database, worker, 3)
    claimed = worker.manager._claimer.claim_batch(
        [values.StepRef(CHECK, order_id, 0) for order_id in order_ids])
    # The middle order ends elsewhere while its check runs, its step left
    # as it was: the check's own write goes through, its order's does not.
    with database.session() as session, session.begin():
        assert database.repositories.orders.fail(session, order_ids[1], NOW,
                                                 'ended elsewhere')

    worker.manager._applier.apply_batch(
        [(run, base.Completed({'n': index}))
         for index, (run, _) in enumerate(claimed)])

    first, middle, last = (_state(database, order_id)
                           for order_id in order_ids)
    for state, index in ((first, 0), (last, 2)):
        assert state.order.status == models.ACTIVE
        assert state.order.meta['n'] == index
        assert state.steps[CHECK].status == models.STEP_DONE
    # Rolled back whole: its step is still claimed, as it was.
    assert middle.order.status == models.ERROR
    assert (middle.steps[CHECK].status, middle.steps[CHECK].owner) == (
        models.STEP_PENDING, OWNER)
    assert sorted(worker.observed[-3:]) == ['active', 'active',
                                            'superseded']
    # Its run is in its history all the same, written with the others'.
    assert [_history(database, order_id)[-1] for order_id in order_ids] == [
        (CHECK, 1, OWNER, result, None) for result in (
            models.RUN_DONE, models.RUN_SUPERSEDED, models.RUN_DONE)]


def test_a_batch_of_several_kinds_of_result_writes_each_as_alone(
        database, use_plugin):
    """Results written together by kind (``worker.steps.writes``) beside
    those that are not (a failed order, two results of one order)."""
    use_plugin(ScriptedPlugin(*[base.Completed()] * 5))
    worker = _worker(database)
    done, polled, failed = (_order(database, priority=priority)
                            for priority in (0, 4, 0))
    fanout = _order(database, 'fanout')
    claimed = worker.manager._claimer.claim_batch(
        [values.StepRef(REQUEST, order_id, 0)
         for order_id in (done, polled, failed)] +
        [values.StepRef(name, fanout, 0) for name in ROOTS[:2]])

    worker.manager._applier.apply_batch([
        (claimed[0][0], base.Completed({'serial': 'x'})),
        (claimed[1][0], base.RetryLater(30)),
        (claimed[2][0], base.Failed('refused')),
        (claimed[3][0], base.Completed()), (claimed[4][0], base.Completed())])

    state = _state(database, done)
    assert _statuses(state) == {REQUEST: models.STEP_DONE,
                                CHECK: models.STEP_PENDING}
    assert state.steps[REQUEST].output == {'serial': 'x'}
    state = _state(database, polled)
    [retry] = state.retries
    assert (state.steps[REQUEST].polls, retry.retry_task, retry.retry_at,
            retry.priority) == (1, REQUEST, NOW + _seconds(30), 4)
    state = _state(database, failed)
    assert state.order.status == models.ERROR
    assert 'refused' in state.order.error_reason
    state = _state(database, fanout)
    assert [state.steps[name].status for name in ROOTS[:2]] == [
        models.STEP_DONE] * 2
    assert sorted(worker.observed[-5:]) == ['done'] * 3 + ['error', 'retry']
    assert [_history(database, order_id) for order_id in (
        done, polled, failed)] == [
        [(REQUEST, 1, OWNER, models.RUN_DONE, None)],
        [(REQUEST, 1, OWNER, models.RUN_RETRY, None)],
        [(REQUEST, 1, OWNER, models.RUN_FAILED, 'refused')]]
    assert sorted(_history(database, fanout)) == sorted(
        (name, 1, OWNER, models.RUN_DONE, None) for name in ROOTS[:2])


def test_ready_steps_of_a_batch_go_out_in_one_message(database,
                                                      use_plugin):
    use_plugin(ScriptedPlugin(*[base.Completed()] * 3))
    worker = _worker(database)
    order_ids = [_order(database) for _ in range(3)]
    claimed = worker.manager._claimer.claim_batch(
        [values.StepRef(REQUEST, order_id, 0) for order_id in order_ids])

    worker.manager._applier.apply_batch([(run, base.Completed())
                                         for run, _ in claimed])

    assert worker.client.messages == [
        ('run_steps', rpcapi.RUN_STEPS_VERSION,
         {'steps': [[CHECK, order_id, 0] for order_id in order_ids]})]


# Request ids: each line about an order carries its order's.

@pytest.fixture
def lines():
    with fakes.log_lines('worker') as found:
        yield found


def _origin(name):
    return orders.Origin(request_id='req-%s' % name,
                         global_request_id='req-global-%s' % name)


def test_each_line_about_an_order_carries_its_request_ids(
        database, install, lines):
    seen = {}
    together = threading.Barrier(3, timeout=10)

    def during(view):
        seen.setdefault(view.id, []).append(oslo_context.get_current())
        if view.step == 'first':
            together.wait()

    install(Script(during=during, first=[base.Completed()] * 3,
                   second=[base.RetryLater(5)] * 3))
    first = _order(database, 'scripted', origin=_origin('a'))
    second = _order(database, 'scripted', origin=_origin('b'))
    bare = _order(database, 'scripted')
    worker = _worker(database, step_concurrency=3)
    # The three first steps end together and the first batch of results
    # is slow: the next batch holds two, written (and logged) by the
    # thread of one of them.
    write = worker.manager._apply._write

    def slow_write(items):
        time.sleep(0.2)
        return write(items)
    worker.manager._apply._write = slow_write

    # A message with no request ids (as an older sender's): the orders'
    # rows give them once claimed.
    worker.manager.run_steps({}, [['first', order_id, 0] for order_id
                                  in (first, second, bare)])
    worker.deliver()

    for order_id, name in ((first, 'a'), (second, 'b')):
        found = lines.about(order_id)
        assert found, 'no line about order %s' % order_id
        for _, _, ctxt, line in found:
            assert (ctxt.request_id, ctxt.global_request_id) == (
                'req-%s' % name, 'req-global-%s' % name), line
            assert '[req-global-%s req-%s ' % (name, name) in line
        # The plugin ran with its order's context as its thread's.
        assert [(ctxt.request_id, ctxt.global_request_id)
                for ctxt in seen[order_id]] == [
            ('req-%s' % name, 'req-global-%s' % name)] * 2
    for _, _, ctxt, line in lines.about(bare):
        assert ctxt is None or ctxt.request_id not in ('req-a', 'req-b')
    # A step thread keeps no order's context once its step ended.
    assert worker.manager._steps.submit(
        oslo_context.get_current).result() is None


def test_the_casts_and_retry_rows_of_an_order_carry_its_request_ids(
        database, install):
    install(Script(first=[base.Completed()], second=[base.RetryLater(5)]))
    order_id = _order(database, 'scripted', origin=_origin('a'))
    worker = _worker(database)

    worker.run('first', order_id, 0)

    # The step made ready is cast with its order's ids in the context;
    # the step itself is as it was.
    [sent] = worker.client.contexts
    assert sent['orders'] == {order_id: ['req-a', 'req-global-a']}
    assert worker.client.messages[0][2] == {
        'steps': [['second', order_id, 0]]}
    worker.deliver()
    [retry] = _state(database, order_id).retries
    assert retry.retry_kwargs == (
        '{"generation": 1, "request_id": "req-a", '
        '"global_request_id": "req-global-a"}')


def test_a_message_carries_the_ids_of_an_order_before_its_claim(
        database, install):
    ids_seen = []
    install(Script(during=lambda view: ids_seen.append(
        oslo_context.get_current().request_id), first=[base.Completed()]))
    order_id = _order(database, 'scripted', origin=_origin('a'))
    worker = _worker(database)
    ctxt = context.StepsContext(orders={
        order_id: values.RequestIds('req-a', 'req-global-a')})

    worker.manager.run_steps(ctxt, [['first', order_id, 0]])

    assert ids_seen == ['req-a']
