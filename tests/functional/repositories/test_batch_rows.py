"""A batch's fenced writes in one statement (``worker.db.batch_rows``) on
PostgreSQL and MariaDB: each step written as its own write would write
it, a stale generation writing nothing and counted out, a step given
twice counted once."""

import contextlib

import pytest
import sqlalchemy as sa

from tests.functional import databases
from tests.functional.repositories.shared import claimed_order
from tests.functional.repositories.shared import plus
from tests.functional.repositories.shared import REQUEST
from tests.functional.repositories.shared import step_of
from tests.functional.repositories.shared import write
from worker.db import batch_rows
from worker.db import models

on_databases = pytest.mark.parametrize('backend', databases.BACKENDS)


@contextlib.contextmanager
def executions(database):
    """The list of ``(statement, executemany)`` run on ``database``."""
    ran = []

    def record(conn, cursor, statement, parameters, context, executemany):
        ran.append((statement, executemany))
    sa.event.listen(database.engine, 'before_cursor_execute', record)
    try:
        yield ran
    finally:
        sa.event.remove(database.engine, 'before_cursor_execute', record)


def retries(order_ids, token=1):
    """``retry_many``'s arguments for the steps REQUEST of ``order_ids``,
    each with failures of its own (its index)."""
    return [(order_id, REQUEST, token, index, 0, 'retry %d' % index)
            for index, order_id in enumerate(order_ids)]


@on_databases
def test_fenced_writes_of_a_batch_run_as_one_statement(database, backend):
    steps_repo = database.repositories.steps
    fresh = [claimed_order(database, 'w1@h') for _ in range(3)]
    stale = claimed_order(database, 'w1@h')

    with executions(database) as ran:
        # The stale step's token is 0: it was claimed since (1).
        assert write(database, steps_repo.retry_many,
                     retries(fresh) + [(stale, REQUEST, 0, 9, 9, 'stale')],
                     plus(1)) == 3

    updates = [executemany for statement, executemany in ran
               if statement.lstrip().upper().startswith('UPDATE')]
    assert updates == ([True] if backend == 'sqlite' else [False])
    assert [(step.failures, step.last_error, step.owner) for step in (
        step_of(database, order_id, REQUEST) for order_id in fresh)] == [
        (index, 'retry %d' % index, None) for index in range(3)]
    step = step_of(database, stale, REQUEST)
    assert (step.failures, step.owner, step.updated_at) == (0, 'w1@h',
                                                            step.claimed_at)


@on_databases
def test_a_step_given_twice_is_counted_once(database, backend):
    if backend == 'sqlite':
        pytest.skip('an executemany counts each of its executions')
    order_id = claimed_order(database, 'w1@h')

    assert write(database, database.repositories.steps.finish_many, [
        (order_id, REQUEST, 1, models.STEP_DONE, {'n': 1}, None),
        (order_id, REQUEST, 1, models.STEP_DONE, {'n': 1}, None)],
        plus(1)) == 1
    assert step_of(database, order_id, REQUEST).status == models.STEP_DONE


@on_databases
def test_a_batch_beyond_one_statement_s_rows_is_written_in_several(
        database, backend, monkeypatch):
    """More rows than a statement takes (MariaDB): statements of at most
    ``MOST_ROWS`` rows, each padded to its bucket with copies of its last
    row, which count once."""
    monkeypatch.setattr(batch_rows, 'MOST_ROWS', 3)
    order_ids = [claimed_order(database, 'w1@h') for _ in range(7)]

    with executions(database) as ran:
        assert write(database, database.repositories.steps.retry_many,
                     retries(order_ids), plus(1)) == 7

    updates = sum(statement.lstrip().upper().startswith('UPDATE')
                  for statement, _ in ran)
    assert updates == {'mysql': 3}.get(backend, 1)
    assert [step_of(database, order_id, REQUEST).failures
            for order_id in order_ids] == list(range(7))
