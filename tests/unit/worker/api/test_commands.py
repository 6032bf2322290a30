"""The front door's transactions return what they wrote and the steps to
cast, and cast nothing themselves (``worker.api.commands``): the caller
announces, then casts."""

import datetime

import pytest

from worker.api import casts
from worker.api import commands
from worker.api import requests
from worker.db import models
from worker.db import orders as order_rows
from worker import order_types
from worker import rpcapi
from worker import values

NOW = datetime.datetime(2026, 11, 28, 12, 0, 0)


@pytest.fixture
def database(sqlite_database):
    """Cancel and resume use the API's queries, which only SQL serves."""
    return sqlite_database


ORIGIN = order_rows.Origin(project_id='p1', request_id='req-1')


def _create(database, **fields):
    return commands.create(database, requests.CreateOrders(
        order_types.get('fanout'), {}, origin=ORIGIN, **fields), NOW)


def test_create_returns_each_order_s_first_steps_to_cast(database, client):
    created = _create(database, count=2)

    workflow = order_types.get('fanout')
    assert [(step.step, step.order_id, step.generation)
            for step in created.to_cast] == [
        (name, order.id, 0)
        for order in created.orders for name in workflow.roots()]
    assert {step.request.request_id for step in created.to_cast} == {
        'req-1'}
    with database.reader() as session:
        assert [database.repositories.orders.get(
            session, order.id).status
            for order in created.orders] == [models.PENDING] * 2
    # Nothing left the process: the caller casts.
    assert client.casts == []
    assert casts.cast_steps(rpcapi.WorkerAPI(client), created.to_cast) == 0
    assert len(client.casts) == len(created.to_cast)


def test_an_order_that_starts_later_has_nothing_to_cast(database):
    later = NOW + datetime.timedelta(hours=1)
    created = _create(database, not_before=later)

    assert created.to_cast == ()
    with database.reader() as session:
        due = database.repositories.retry_tasks.list_tasks(
            session, order_id=created.orders[0].id)
    assert {(row.retry_task, row.retry_at) for row in due} == {
        (name, later) for name in order_types.get('fanout').roots()}


def test_cancel_returns_the_compensation_step_to_cast(database, client):
    [order] = _create(database).orders
    workflow = order_types.get('fanout')

    cancelled = commands.cancel(database, workflow, order.id, 'no', NOW)

    assert cancelled.to_cast == (cancelled.compensation,)
    assert cancelled.compensation.step == workflow.compensation.name
    assert client.casts == []
    assert commands.cancel(database, workflow, order.id, 'no', NOW) is None


def test_cast_steps_counts_what_could_not_be_cast():
    steps = [values.StepRef('issue', 'order-%d' % index, 0)
             for index in range(3)]
    assert casts.cast_steps(None, steps, rows_per_cast=2) == 3
