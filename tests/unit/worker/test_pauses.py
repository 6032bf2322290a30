"""Pausing and unpausing (``OrderAPI.pause``, ``unpause``): a step a
pause holds is not claimed and waits, taking nothing; the unpause casts
it; a claim pays for no pause while nothing is paused. On SQLite (the
API's reads are SQL only) with a recording RPC client and a worker
manager in this process.

``tests/functional/test_pauses.py`` runs it over real processes and
databases.
"""

import datetime

import pytest

from tests import config
from tests import fakes
from worker import api
from worker.db import models
from worker.db import pauses as pause_rows
from worker import manager
from worker import order_types
from worker.order_types import base as types_base
from worker.plugins import base
from worker import policy
from worker import rpcapi

NOW = datetime.datetime(2026, 11, 28, 12, 0, 0)
TYPE = 'pausable'
PROJECT = 'p'


class Pausable(types_base.OrderType):
    """One step, ``call``, that uses the keys in its order's ``keys``."""

    steps = (types_base.Step(
        'call', resources=lambda order: order.meta.get('keys', ()),
        policy=policy.StepPolicy(max_attempts=1)),)

    def call(self, order):
        return base.Completed()


@pytest.fixture
def installed(monkeypatch):
    workflows = dict(order_types.installed(),
                     pausable=types_base.check(TYPE, Pausable))
    monkeypatch.setattr(order_types, 'installed', lambda: workflows)
    return workflows[TYPE]


@pytest.fixture
def database(sqlite_database):
    return sqlite_database


@pytest.fixture
def conf(installed):
    """Pauses seen at every claim (the clock of these tests stands
    still)."""
    return config.make_conf(**{'worker.pause_refresh_seconds': 0,
                               'worker.pause_recheck_seconds': 60})


class Worker:
    """A worker manager on ``database``, its clock at ``clock[0]``."""

    def __init__(self, database, conf, clock):
        self.client = fakes.RecordingRPCClient()
        self.observed = []
        self.manager = manager.WorkerManager(
            conf, database, '1@host', worker_api=rpcapi.WorkerAPI(
                self.client), clock=lambda: clock[0],
            observe_result=self.observed.append, step_concurrency=2)

    def run(self, order_id, generation=0):
        self.manager.run_steps({}, [['call', order_id, generation]])


@pytest.fixture
def clock():
    return [NOW]


@pytest.fixture
def orders(database, client, conf, clock, installed):
    return api.OrderAPI(database, conf, rpcapi.WorkerAPI(client),
                        now=lambda: clock[0])


@pytest.fixture
def worker(database, conf, clock, installed):
    return Worker(database, conf, clock)


def _create(orders, keys=(), project=PROJECT):
    return orders.create(TYPE, {'keys': list(keys)}, project_id=project)


def _retry_rows(database):
    with database.reader() as session:
        return database.repositories.retry_tasks.list_tasks(session)


def _status(orders, order_id):
    return orders.get(order_id, all_projects=True).status


def test_a_paused_type_waits_unclaimed_and_the_unpause_casts_it(
        database, orders, worker, client):
    pause = orders.pause('order_type', TYPE, reason='CA maintenance')
    order = _create(orders)
    casts = len(client.casts)

    worker.run(order.id)

    # Not claimed: the step is where it was, no run, a waiting row.
    assert _status(orders, order.id) == models.PENDING
    with database.reader() as session:
        step = database.repositories.steps.for_order(session,
                                                     order.id)['call']
        [pause_row] = database.repositories.pauses.listed(session)
    assert (step.generation, step.owner, step.dispatched_at,
            step.attempt) == (0, None, None, 0)
    [row] = _retry_rows(database)
    assert (row.order_id, row.waiting_for, row.retry_at) == (
        order.id, pause_rows.waiting_key(pause_row.id),
        NOW + datetime.timedelta(seconds=60))
    assert worker.observed == ['waiting']
    shown = orders.get(order.id, project_id=PROJECT)
    assert shown.paused_by == (pause,)
    assert (pause.target, pause.name, pause.reason) == (
        'order_type', TYPE, 'CA maintenance')

    lifted = orders.unpause('order_type', TYPE)

    assert lifted == pause
    assert _retry_rows(database) == []
    assert client.casts[casts:] == [('call', {'order_id': order.id,
                                              'generation': 0})]
    assert orders.get(order.id, project_id=PROJECT).paused_by == ()
    worker.run(order.id)
    assert _status(orders, order.id) == models.ACTIVE
    assert orders.pauses() == ()


def test_a_paused_order_waits_and_the_others_of_its_type_run(
        orders, worker):
    held, other = _create(orders), _create(orders)
    orders.pause('order', held.id)

    worker.run(held.id)
    worker.run(other.id)

    assert _status(orders, held.id) == models.PENDING
    assert _status(orders, other.id) == models.ACTIVE
    assert [pause.project_id for pause in orders.pauses()] == [PROJECT]


def test_a_paused_resource_key_holds_the_steps_that_need_it(
        orders, worker):
    needs, others = _create(orders, ['ca:x']), _create(orders, ['ca:y'])
    orders.pause('resource', 'ca:x')

    worker.run(needs.id)
    worker.run(others.id)

    assert _status(orders, needs.id) == models.PENDING
    assert _status(orders, others.id) == models.ACTIVE
    [pause] = orders.get(needs.id, all_projects=True).paused_by
    assert (pause.target, pause.name) == ('resource', 'ca:x')
    orders.unpause('resource', 'ca:x')
    worker.run(needs.id)
    assert _status(orders, needs.id) == models.ACTIVE


def test_a_paused_topic_holds_the_types_cast_to_it(orders, worker, conf):
    order = _create(orders)
    orders.pause('topic', conf.worker.topic)
    worker.run(order.id)
    assert _status(orders, order.id) == models.PENDING
    orders.unpause('topic', conf.worker.topic)
    worker.run(order.id)
    assert _status(orders, order.id) == models.ACTIVE


def test_pausing_twice_keeps_the_first_pause_and_unpausing_nothing_is_none(
        orders):
    first = orders.pause('resource', 'ca:x', reason='first')
    assert orders.pause('resource', 'ca:x', reason='second') == first
    assert orders.unpause('resource', 'ca:x') == first
    assert orders.unpause('resource', 'ca:x') is None


def test_a_project_pauses_its_own_orders_only(orders):
    mine, theirs = _create(orders), _create(orders, project='other')

    assert orders.pause('order', mine.id, project_id=PROJECT).name == mine.id
    with pytest.raises(api.OrderNotFound):
        orders.pause('order', theirs.id, project_id=PROJECT)
    with pytest.raises(api.OrderNotFound):
        orders.unpause('order', theirs.id, project_id=PROJECT)
    with pytest.raises(api.InvalidRequest):
        orders.pause('order_type', TYPE, project_id=PROJECT)
    assert orders.unpause('order', mine.id, project_id=PROJECT).name == \
        mine.id


@pytest.mark.parametrize('target, name, error', [
    ('queue', 'x', api.InvalidRequest),
    ('order_type', 'no-such-type', api.UnknownOrderType),
    ('order', 'no-such-order', api.OrderNotFound),
    ('resource', '', api.InvalidRequest),
    ('resource', 'k' * 256, api.InvalidRequest),
])
def test_what_cannot_be_paused_is_refused(orders, target, name, error):
    with pytest.raises(error):
        orders.pause(target, name)
    assert orders.pauses() == ()


def test_a_claim_at_rest_looks_for_pauses_once_per_refresh(
        database, orders, installed, monkeypatch, clock):
    conf = config.make_conf(**{'worker.pause_refresh_seconds': 2})
    worker = Worker(database, conf, clock)
    probes = []
    real = pause_rows.any_paused
    monkeypatch.setattr(pause_rows, 'any_paused',
                        lambda session: probes.append(1) or real(session))
    first, second, third = (_create(orders) for _ in range(3))

    worker.run(first.id)
    worker.run(second.id)
    assert len(probes) == 1
    # Paused within the refresh: the next claim has not looked yet.
    orders.pause('order_type', TYPE)
    clock[0] += datetime.timedelta(seconds=2)
    worker.run(third.id)

    assert len(probes) == 2
    assert [_status(orders, order.id) for order in (first, second, third)] \
        == [models.ACTIVE, models.ACTIVE, models.PENDING]
