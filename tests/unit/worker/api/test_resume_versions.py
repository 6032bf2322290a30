"""``OrderAPI.resume`` of an order whose type changed since it was
created: its own graph's steps run again, on SQLite (the API's queries are
SQL only) with a recording RPC client."""

import datetime

import pytest

from tests import config
from tests import singular
from worker import api
from worker.db import models
from worker import manager
from worker import order_types
from worker.order_types import base as types_base
from worker.plugins import base as results
from worker import rpcapi

NOW = datetime.datetime(2026, 11, 28, 12, 0, 0)
PROJECT = 'p1'
BEFORE = (types_base.Step('first'),
          types_base.Step('second', after=('first',)))
AFTER = BEFORE + (types_base.Step('third', after=('first',)),)


class _Steps(types_base.OrderType):
    """Every step done at once."""

    def first(self, order):
        return results.Completed()

    second = third = first


def _install(monkeypatch, steps, previous=()):
    workflow = types_base.check('grown', type('Grown', (_Steps,), {
        'steps': steps, 'previous_workflows': previous}))
    workflows = dict(order_types.installed(), grown=workflow)
    monkeypatch.setattr(order_types, 'installed', lambda: workflows)
    return workflow


def _api(database, client):
    """An ``OrderAPI``, its options those of the types installed now."""
    return api.OrderAPI(database, config.make_conf(),
                        rpcapi.WorkerAPI(client), now=lambda: NOW)


def _failed_at_second(orders, database):
    """An order of ``grown``: ``first`` DONE, ``second`` FAILED, ERROR."""
    order = orders.create('grown', {}, project_id=PROJECT)
    steps = database.repositories.steps
    with database.session() as session, session.begin():
        for name, status in (('first', models.STEP_DONE),
                             ('second', models.STEP_FAILED)):
            generation = steps.for_order(session, order.id)[name].generation
            if name == 'second':
                singular.start(steps, session, order.id, ('second',), NOW,
                               True)
            assert singular.claim(steps, session, order.id, name,
                                  generation, NOW, 'w@h',
                                  NOW + datetime.timedelta(seconds=60))
            assert singular.finish(steps, session, order.id, name,
                                   generation + 1, NOW, status,
                                   last_error='no')
        assert database.repositories.orders.fail(session, order.id, NOW,
                                                 'step second failed')
    return order


def test_an_order_resumed_after_its_type_gained_a_step_restarts_its_graph(
        monkeypatch, sqlite_database, client):
    before = _install(monkeypatch, BEFORE)
    orders = _api(sqlite_database, client)
    order = _failed_at_second(orders, sqlite_database)
    client.messages.clear()
    _install(monkeypatch, AFTER, (types_base.PreviousWorkflow(BEFORE),))

    resumed = orders.resume(order.id, project_id=PROJECT)
    assert resumed.status == models.PENDING
    assert resumed.workflow_version == before.version
    # Its own graph: no third step, second runs again.
    assert [step.name for step in resumed.steps] == ['first', 'second']
    [(ctxt, kwargs)] = [client.delivered()
                        for _ in range(len(client.messages))]
    assert [step[0] for step in kwargs['steps']] == ['second']
    # A worker of the new release ends it on its graph.
    manager.WorkerManager(
        config.make_conf(), sqlite_database, '1@host',
        worker_api=rpcapi.WorkerAPI(client), clock=lambda: NOW,
        observe_result=lambda result: None,
        step_concurrency=1).run_steps(ctxt, kwargs['steps'])
    ended = orders.get(order.id, project_id=PROJECT)
    assert ended.status == models.ACTIVE, ended.error_reason


def test_an_order_of_a_graph_no_longer_declared_is_not_resumed(
        monkeypatch, sqlite_database, client):
    before = _install(monkeypatch, BEFORE)
    orders = _api(sqlite_database, client)
    order = _failed_at_second(orders, sqlite_database)
    _install(monkeypatch, AFTER)
    with pytest.raises(api.OrderNotResumable,
                       match='order type grown does not declare workflow '
                             'version %s' % before.version):
        orders.resume(order.id, project_id=PROJECT)
    assert orders.get(order.id, project_id=PROJECT).status == models.ERROR
