"""Local continuations on the in-memory database: a step made ready by a
result is claimed in the result's transaction and run by the same worker,
with no cast; within the fairness bound, the intake, the topic and the
resource slots.

``tests/functional/test_worker_steps.py`` runs them over real worker
processes and databases.
"""

import datetime

import pytest

from tests import fakes
from tests.unit.worker.steps import test_flow
from worker.db import memory
from worker.db import models
from worker import intake
from worker import manager
from worker import order_types
from worker.order_types import base as types_base
from worker.plugins import base
from worker import policy
from worker import rpcapi

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)
_read = test_flow._read
OWNER = '1@host'
TOPIC = 'barbican_retry_worker'
TYPE = 'chain'


class Chain(types_base.OrderType):
    """Three steps in a row; ``second`` uses the keys in its order's
    ``keys``."""

    steps = (
        types_base.Step('first', policy=policy.StepPolicy(max_attempts=1)),
        types_base.Step('second', after=('first',),
                        resources=lambda order: order.meta.get('keys', ()),
                        policy=policy.StepPolicy(max_attempts=1)),
        types_base.Step('third', after=('second',),
                        policy=policy.StepPolicy(max_attempts=1)),
    )

    def first(self, order):
        return base.Completed()

    second = third = first


class Fork(types_base.OrderType):
    """``first``, then ``left`` and ``right`` side by side."""

    steps = (
        types_base.Step('first'),
        types_base.Step('left', after=('first',)),
        types_base.Step('right', after=('first',)),
    )

    def first(self, order):
        return base.Completed()

    left = right = first


@pytest.fixture(autouse=True)
def installed(monkeypatch):
    workflows = dict(order_types.installed(),
                     chain=types_base.check(TYPE, Chain),
                     fork=types_base.check('fork', Fork))
    monkeypatch.setattr(order_types, 'installed', lambda: workflows)


class Worker:
    """A worker manager that serves ``topic``, with its casts and the
    steps it continued."""

    def __init__(self, database, topic=TOPIC, room=None, **resources):
        self.client = fakes.RecordingRPCClient()
        self.continued = []
        self.manager = manager.WorkerManager(
            test_flow._conf(**resources), database, OWNER,
            worker_api=rpcapi.WorkerAPI(self.client), clock=lambda: NOW,
            step_concurrency=2, topic=topic, intake=room,
            observe_continued=self.continued.append)

    def run(self, order_id):
        self.manager.run_steps({}, [['first', order_id, 0]])


def _order(database, keys=()):
    with database.session() as session, session.begin():
        return database.repositories.orders.create(
            session, order_types.get(TYPE), {'keys': list(keys)}, NOW).id


def _history(database, order_id):
    return [(run.step, run.worker, run.result) for run in _read(
        database, database.repositories.history.for_order, order_id)]


def _conf_set(worker, value):
    worker.manager._continuer._conf.set_override('max_local_steps', value,
                                                 'worker')


def test_the_next_steps_run_here_with_no_message_up_to_the_bound():
    database = memory.InMemoryDatabase()
    worker = Worker(database)
    _conf_set(worker, 1)
    order_id = _order(database)

    worker.run(order_id)

    # first from its message; second continued here; third is the
    # second in a row for the order: cast, behind the others.
    assert worker.continued == [1]
    assert worker.client.casts == [('third', {'order_id': order_id,
                                              'generation': 0})]
    assert _history(database, order_id) == [
        ('first', OWNER, models.RUN_DONE),
        ('second', OWNER, models.RUN_DONE)]
    steps = _read(database, database.repositories.steps.for_order, order_id)
    # Claimed as a message's claim would: its token, its attempt.
    assert (steps['second'].status, steps['second'].generation,
            steps['second'].attempt) == (models.STEP_DONE, 1, 1)

    _conf_set(worker, 4)
    while worker.client.messages:
        ctxt, kwargs = worker.client.delivered()
        worker.manager.run_steps(ctxt, kwargs['steps'])

    assert _read(database, database.repositories.orders.get,
                 order_id).status == models.ACTIVE


def test_a_cast_that_raises_after_the_commit_loses_no_continuation(
        monkeypatch):
    database = memory.InMemoryDatabase()
    worker = Worker(database)
    _conf_set(worker, 1)
    order_id = _order(database)

    def broken(steps):
        raise RuntimeError('the cast broke')
    monkeypatch.setattr(worker.manager._applier, 'cast', broken)

    worker.run(order_id)

    # second, claimed in first's transaction, still ran here; no result
    # was written twice (no superseded row), none failed as unapplied.
    assert worker.continued == [1]
    assert _history(database, order_id) == [
        ('first', OWNER, models.RUN_DONE),
        ('second', OWNER, models.RUN_DONE)]
    assert _read(database, database.repositories.orders.get,
                 order_id).status == models.PENDING


@pytest.mark.parametrize('worker_of', [
    # Steps wait in the intake: they go first.
    lambda database: Worker(database, room=_taken_room()),
    # Another topic's steps are another pool's.
    lambda database: Worker(database, topic='other'),
    # Turned off.
    lambda database: _turned_off(Worker(database)),
], ids=['intake', 'topic', 'off'])
def test_the_next_step_is_cast_when_it_may_not_go_on_here(worker_of):
    database = memory.InMemoryDatabase()
    worker = worker_of(database)
    order_id = _order(database)

    worker.run(order_id)

    assert worker.client.casts == [('second', {'order_id': order_id,
                                               'generation': 0})]
    assert sum(worker.continued) == 0


def _taken_room():
    room = intake.Room(10)
    room.take(1)
    return room


def _turned_off(worker):
    _conf_set(worker, 0)
    return worker


def test_a_continued_step_without_a_free_slot_waits_as_a_cast_one():
    database = memory.InMemoryDatabase()
    worker = Worker(database, ca={'capacity': 1})
    holder, order_id = _order(database, ['ca:x']), _order(database,
                                                          ['ca:x'])
    with database.session() as session, session.begin():
        # Another run holds the only slot of ca:x.
        assert database.repositories.resources.take(
            session, 'ca:x', 0, (holder, 'second', 1), NOW)

    worker.run(order_id)

    steps = _read(database, database.repositories.steps.for_order, order_id)
    [row] = _read(database, database.repositories.retry_tasks.list_tasks)
    # Not claimed, not cast: it waits for the slot, as after a cast.
    assert (steps['second'].status, steps['second'].generation,
            steps['second'].dispatched_at) == (models.STEP_PENDING, 0, None)
    assert (row.order_id, row.retry_task, row.waiting_for) == (
        order_id, 'second', 'ca:x')
    assert worker.client.casts == []
    assert sum(worker.continued) == 0


def test_a_stopping_worker_gives_back_the_steps_it_claimed_to_go_on():
    database = memory.InMemoryDatabase()
    client = fakes.RecordingRPCClient()

    def stop_once_written(kind):
        # The service stops as first's result commits: its apply claimed
        # left (for this thread) and right (for a thread of its own).
        worker.cancel_queued_steps()
    worker = manager.WorkerManager(
        test_flow._conf(), database, OWNER,
        worker_api=rpcapi.WorkerAPI(client), clock=lambda: NOW,
        step_concurrency=2, topic=TOPIC, observe_result=stop_once_written)
    with database.session() as session, session.begin():
        order_id = database.repositories.orders.create(
            session, order_types.get('fork'), {}, NOW).id

    worker.run_steps({}, [['first', order_id, 0]])
    worker.wait_for_steps()

    # Neither ran, nor waits for the recovery (which would count a crash
    # of each once this worker's heartbeat is gone): both are PENDING as
    # if never claimed, and cast again at the token of their claim.
    steps = _read(database, database.repositories.steps.for_order, order_id)
    for name in ('left', 'right'):
        step = steps[name]
        assert (step.status, step.generation, step.owner, step.attempt,
                step.crashes, step.started_at, step.dispatched_at) == (
            models.STEP_PENDING, 1, None, 0, 0, None, NOW)
    assert sorted(client.casts) == [
        (name, {'order_id': order_id, 'generation': 1})
        for name in ('left', 'right')]
    assert _history(database, order_id) == [
        ('first', OWNER, models.RUN_DONE)]

    other = Worker(database)
    while client.messages:
        ctxt, kwargs = client.delivered()
        other.manager.run_steps(ctxt, kwargs['steps'])

    assert _read(database, database.repositories.orders.get,
                 order_id).status == models.ACTIVE
