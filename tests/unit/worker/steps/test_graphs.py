"""A worker applies to an order the graph it was created with, never
another (``worker.steps.graphs`` at the claim), on the in-memory database:
an order whose type gained a step finishes on its own graph, and one whose
graph the worker does not declare is left untaken, logged once."""

import datetime
import logging

import pytest

from tests import config
from tests import fakes
from worker.db import memory
from worker.db import models
from worker import manager
from worker import order_types
from worker.order_types import base as types_base
from worker.plugins import base as results
from worker import rpcapi

NOW = datetime.datetime(2026, 11, 28, 12, 0, 0)
BEFORE = (types_base.Step('first'),
          types_base.Step('second', after=('first',)))
AFTER = BEFORE + (types_base.Step('third', after=('first',)),)


class _Steps(types_base.OrderType):
    """Every step done at once."""

    def first(self, order):
        return results.Completed({'ran_' + order.step: True})

    second = third = first


def _workflow(steps, previous=()):
    return types_base.check('grown', type('Grown', (_Steps,), {
        'steps': steps, 'previous_workflows': previous}))


@pytest.fixture
def install(monkeypatch):
    """``install(workflow)``: the ``grown`` type is ``workflow`` for the
    processes the test builds after."""
    def install(workflow):
        workflows = dict(order_types.installed(), grown=workflow)
        monkeypatch.setattr(order_types, 'installed', lambda: workflows)
    return install


def _order(database, workflow):
    with database.session() as session, session.begin():
        return database.repositories.orders.create(session, workflow, {},
                                                   NOW).id


class _Worker:
    """A worker manager on ``database``, and the steps it casts."""

    def __init__(self, database):
        self.client = fakes.RecordingRPCClient()
        self.manager = manager.WorkerManager(
            config.make_conf(), database, '1@host',
            worker_api=rpcapi.WorkerAPI(self.client), clock=lambda: NOW,
            observe_result=lambda result: None, step_concurrency=1)

    def run(self, order_id, step='first', generation=0):
        """Deliver one step, then what it casts, as a broker would."""
        self.manager.run_steps({}, [[step, order_id, generation]])
        while self.client.messages:
            ctxt, kwargs = self.client.delivered()
            self.manager.run_steps(ctxt, kwargs['steps'])


def _read(database, order_id):
    repositories = database.repositories
    with database.reader() as session, session.begin():
        return (repositories.orders.get(session, order_id),
                repositories.steps.for_order(session, order_id))


def test_an_order_created_before_its_type_gained_a_step_ends_on_its_graph(
        install):
    database = memory.InMemoryDatabase()
    before = _workflow(BEFORE)
    old = _order(database, before)
    install(_workflow(AFTER, (types_base.PreviousWorkflow(BEFORE),)))
    new = _order(database, order_types.get('grown'))
    worker = _Worker(database)
    worker.run(old)
    worker.run(new)

    order, steps = _read(database, old)
    assert order.status == models.ACTIVE, order.error_reason
    assert order.workflow_version == before.version
    assert set(steps) == {'first', 'second'}
    assert order.meta == {'ran_first': True, 'ran_second': True}
    order, steps = _read(database, new)
    assert order.status == models.ACTIVE, order.error_reason
    assert order.workflow_version == order_types.get('grown').version
    assert set(steps) == {'first', 'second', 'third'}


def test_an_order_without_a_version_runs_on_the_graph_of_its_rows(install):
    database = memory.InMemoryDatabase()
    old = _order(database, _workflow(BEFORE))
    with database.session() as session, session.begin():
        # As migration 0017 leaves the orders created before it.
        order = database.repositories.orders.get(session, old)
        database._store.orders[old] = memory.base.replace(
            order, workflow_version=None)
    install(_workflow(AFTER, (types_base.PreviousWorkflow(BEFORE),)))
    _Worker(database).run(old)
    order, steps = _read(database, old)
    assert order.status == models.ACTIVE, order.error_reason
    assert set(steps) == {'first', 'second'}


def test_a_graph_the_worker_does_not_declare_is_left_untaken(install,
                                                             caplog):
    database = memory.InMemoryDatabase()
    # Created by a newer release; this worker's type declares only the
    # graph before.
    newer = [_order(database, _workflow(AFTER)) for _ in range(2)]
    install(_workflow(BEFORE))
    worker = _Worker(database)
    with caplog.at_level(logging.ERROR, logger='worker.steps.graphs'):
        for order_id in newer + newer:
            worker.run(order_id)
    for order_id in newer:
        order, steps = _read(database, order_id)
        assert order.status == models.PENDING
        first = steps['first']
        assert (first.status, first.generation, first.attempt,
                first.failures, first.owner) == (
            models.STEP_PENDING, 0, 0, 0, None)
    [logged] = [record.getMessage() for record in caplog.records]
    assert logged.startswith(
        'Leaving the orders of type grown created with workflow version '
        '%s to a worker that declares it' % _workflow(AFTER).version)
    assert 'does not declare workflow version' in logged

    # A worker of the newer release takes them.
    install(_workflow(AFTER, (types_base.PreviousWorkflow(BEFORE),)))
    worker = _Worker(database)
    for order_id in newer:
        worker.run(order_id)
        assert _read(database, order_id)[0].status == models.ACTIVE
