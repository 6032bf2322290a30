"""``barbican-retry-status upgrade check``'s "Workflow versions": the
unfinished orders of a graph their installed type no longer declares, on
SQLite (the check's queries are SQL only)."""

import datetime

import sqlalchemy as sa

from scheduler.manage import upgrade_checks
from tests import config
from worker.db import models
from worker import order_types

NOW = datetime.datetime(2026, 11, 28, 12, 0, 0)


def _check(database):
    checks = upgrade_checks.Checks(config.make_conf())
    checks._database = database
    return checks._check_workflow_versions()


def _order(database, version=None, steps=None, status=models.PENDING):
    """An order of ``fanout`` with ``version``; without one, its rows are
    ``steps`` (as migration 0017 leaves the orders before it)."""
    fanout = order_types.get('fanout')
    with database.session() as session, session.begin():
        order = database.repositories.orders.create(session, fanout, {}, NOW)
        order_id = order.id
    with database.session() as session, session.begin():
        session.execute(sa.update(models.Order).where(
            models.Order.id == order_id).values(
                workflow_version=version, status=status))
        if steps is not None:
            session.execute(sa.delete(models.OrderStep).where(
                models.OrderStep.order_id == order_id,
                models.OrderStep.name.not_in(steps)))
    return order_id


def test_open_orders_of_declared_graphs_pass(sqlite_database):
    fanout = order_types.get('fanout')
    _order(sqlite_database, fanout.version)
    _order(sqlite_database, steps=fanout.names + ('notify:1',))
    # A finished order's graph does not matter.
    _order(sqlite_database, '0123456789abcdef', status=models.ACTIVE)
    result = _check(sqlite_database)
    assert result.code == upgrade_checks.Code.SUCCESS, result.details
    assert 'fanout %s' % fanout.version in result.details


def test_open_orders_of_graphs_no_longer_declared_warn(sqlite_database):
    for _ in range(2):
        _order(sqlite_database, '0123456789abcdef')
    _order(sqlite_database, steps=('check_key', 'issue'))
    result = _check(sqlite_database)
    assert result.code == upgrade_checks.Code.WARNING
    assert result.details.startswith(
        'unfinished orders of graphs their installed type no longer '
        'declares: fanout version 0123456789abcdef (2), fanout version of '
        'steps check_key, issue (1); ')
    assert "previous_workflows" in result.details
