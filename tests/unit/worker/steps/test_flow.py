"""Flow control on the in-memory database: a step that needs a slot or a
start it cannot take waits without failing, and is woken by the result
that frees one; the keys a step names are checked.

``tests/functional/test_flow_control.py`` runs it over real processes
and databases.
"""

import datetime

from oslo_config import cfg
import pytest

from tests import config
from tests import fakes
from worker.conf import groups
from worker.conf import resources as resource_options
from worker.db import memory
from worker.db import models
from worker import manager
from worker import order_types
from worker.order_types import base as types_base
from worker.plugins import base
from worker import policy
from worker import rpcapi
from worker.steps import flow

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)
TYPE = 'limited'


class Limited(types_base.OrderType):
    """One step, ``call``, that uses the key in its order's ``key`` (none
    if absent); it runs ``during`` (a test's) before it completes."""

    during = None
    steps = (types_base.Step(
        'call', resources=lambda order: order.meta.get('keys', ()),
        policy=policy.StepPolicy(max_attempts=1)),)

    def call(self, order):
        if Limited.during is not None:
            Limited.during(order)
        return base.Completed()


@pytest.fixture
def installed(monkeypatch):
    workflows = dict(order_types.installed(),
                     limited=types_base.check(TYPE, Limited))
    monkeypatch.setattr(order_types, 'installed', lambda: workflows)
    monkeypatch.setattr(Limited, 'during', None)
    return workflows[TYPE]


def _conf(**resource_groups):
    """The options, with ``[resource:PREFIX]`` groups set as given:
    ``ca={'capacity': 2}``."""
    conf = config.make_conf(**{'worker.resource_recheck_seconds': 30})
    for prefix, values in resource_groups.items():
        group = resource_options.group_of(prefix)
        groups.register_group_opts(conf, cfg.OptGroup(group),
                                   resource_options.resource_opts)
        for name, value in values.items():
            conf.set_override(name, value, group)
    return conf


class Worker:
    """A worker manager over the in-memory database, at ``NOW``."""

    def __init__(self, database, conf, clock=lambda: NOW):
        self.client = fakes.RecordingRPCClient()
        self.observed = []
        self.manager = manager.WorkerManager(
            conf, database, '1@host', worker_api=rpcapi.WorkerAPI(
                self.client), clock=clock,
            observe_result=self.observed.append, step_concurrency=4)

    def run(self, order_id, generation=0):
        self.manager.run_steps({}, [['call', order_id, generation]])


def _order(database, keys=()):
    with database.session() as session, session.begin():
        return database.repositories.orders.create(
            session, order_types.get(TYPE), {'keys': list(keys)}, NOW).id


def _read(database, call, *args):
    with database.reader() as session, session.begin():
        return call(session, *args)


def _status(database, order_id):
    return _read(database, database.repositories.orders.get,
                 order_id).status


def test_a_step_without_a_free_slot_waits_then_the_result_wakes_it(
        installed):
    database = memory.InMemoryDatabase()
    worker = Worker(database, _conf(ca={'capacity': 1}))
    first, second = _order(database, ['ca:x']), _order(database, ['ca:x'])
    other = _order(database, ['ca:y'])
    seen = {}

    def during(order):
        if order.id == first:
            # While the first holds ca:x: the second waits, another key
            # runs.
            worker.run(second)
            worker.run(other)
            seen['held'] = _read(database, database.repositories.resources
                                 .held, ['ca:x', 'ca:y'])
            seen['second'] = _read(
                database, database.repositories.steps.for_order,
                second)['call']
            seen['rows'] = _read(
                database, database.repositories.retry_tasks.list_tasks)
    Limited.during = during

    worker.run(first)

    assert seen['held'] == {'ca:x': {0}, 'ca:y': set()}
    assert (seen['second'].generation, seen['second'].owner,
            seen['second'].dispatched_at) == (0, None, None)
    [row] = seen['rows']
    assert (row.order_id, row.waiting_for, row.retry_at,
            row.retry_count) == (second, 'ca:x',
                                 NOW + datetime.timedelta(seconds=30), 0)
    assert worker.observed.count('waiting') == 1
    assert _status(database, other) == models.ACTIVE
    # The first's result freed ca:x, deleted the second's row and cast it.
    assert _read(database, database.repositories.retry_tasks.list_tasks) \
        == []
    assert worker.client.casts == [('call', {'order_id': second,
                                             'generation': 0})]
    assert _read(database, database.repositories.steps.for_order,
                 second)['call'].dispatched_at == NOW
    Limited.during = None
    worker.run(second)
    assert [_status(database, order_id) for order_id in
            (first, second)] == [models.ACTIVE] * 2
    assert _read(database, database.repositories.resources.held,
                 ['ca:x']) == {'ca:x': set()}


def test_a_step_over_its_rate_waits_for_the_next_start(installed):
    database = memory.InMemoryDatabase()
    worker = Worker(database, _conf(api={'capacity': 10, 'rate': '2/m'}))
    orders = [_order(database, ['api:x']) for _ in range(3)]

    for order_id in orders:
        worker.run(order_id)

    assert [_status(database, order_id) for order_id in orders] == [
        models.ACTIVE, models.ACTIVE, models.PENDING]
    [row] = _read(database, database.repositories.retry_tasks.list_tasks)
    # Not a busy loop: due when the first start is a minute old.
    assert (row.order_id, row.waiting_for, row.retry_at) == (
        orders[2], None, NOW + datetime.timedelta(seconds=60))
    # What it took is given back: no slot held.
    assert _read(database, database.repositories.resources.held,
                 ['api:x']) == {'api:x': set()}

    later = Worker(database, _conf(api={'capacity': 10, 'rate': '2/m'}),
                   clock=lambda: NOW + datetime.timedelta(seconds=60))
    later.run(orders[2])
    assert _status(database, orders[2]) == models.ACTIVE


@pytest.mark.parametrize('keys, why', [
    (42, "TypeError: 'int' object is not iterable"),
    ('ca:x', 'returned a string'),
    ([''], 'a key must be a string of 1 to 255 characters'),
    (['step:limited.call'], 'uses a reserved prefix'),
    (['x' * 256], 'a key must be a string'),
])
def test_keys_that_cannot_be_named_fail_the_step(installed, keys, why):
    database = memory.InMemoryDatabase()
    worker = Worker(database, _conf())
    with database.session() as session, session.begin():
        order_id = database.repositories.orders.create(
            session, installed, {'keys': keys}, NOW).id

    worker.run(order_id)

    order = _read(database, database.repositories.orders.get, order_id)
    assert order.status == models.ERROR
    assert 'could not name its resources' in order.error_reason
    assert why in order.error_reason


def test_max_running_of_a_type_and_a_step_are_keys_with_their_bounds(
        installed):
    conf = _conf(ca={'capacity': 4, 'rate': '5/s'})
    conf.set_override('max_running', 3, 'order_type:%s' % TYPE)
    conf.set_override('max_running', 2, 'step:%s.call' % TYPE)
    limits = flow.Limits(conf)
    order = _Order('o1', TYPE, {'keys': ['ca:b', 'ca:a', 'ca:b']})

    need = limits.need(installed, 'call', policy.StepPolicy(max_running=2),
                       order, {})

    assert need == flow.Need(keys=(
        flow.Key('ca:a', 4, resource_options.Rate(5, 1.0)),
        flow.Key('ca:b', 4, resource_options.Rate(5, 1.0)),
        flow.Key('order_type:limited', 3),
        flow.Key('step:limited.call', 2)))
    # A step with no keys and no bound costs its claim nothing.
    assert flow.Limits(_conf()).need(
        installed, 'call', policy.StepPolicy(),
        _Order('o2', TYPE, {}), {}) == flow.Need()


class _Order:
    def __init__(self, order_id, type_name, meta):
        self.id, self.type, self.meta = order_id, type_name, meta


def test_a_type_declares_max_running_and_callable_resources():
    class Bad(types_base.OrderType):
        steps = (types_base.Step('call', resources=('ca:x',)),)

        def call(self, order):
            return base.Completed()

    with pytest.raises(types_base.InvalidOrderType,
                       match='resources must be a callable'):
        types_base.check('bad', Bad)
    Bad.steps = (types_base.Step('call'),)
    Bad.max_running = -1
    with pytest.raises(types_base.InvalidOrderType, match='max_running'):
        types_base.check('bad', Bad)
