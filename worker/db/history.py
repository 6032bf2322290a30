"""Repository of the runs of steps (``order_step_runs``), an order's
history. SQL: Core, an INSERT of many rows in one execution and a column
SELECT on ``ix_order_step_runs_order_id_id``. Every function takes the
session first.

A row is added when a run ends, in the transaction that writes its
result (``worker.steps.writes.RecordRun``) or that takes its step back
(``scheduler.recovery``); rows are never changed, and go with their
order.
"""

import collections.abc as abc
import typing

import sqlalchemy as sa
from sqlalchemy import orm

from worker.db import models
from worker.db import rows
from worker.db import statements

_TABLE = typing.cast(sa.Table, models.OrderStepRun.__table__)


def bounded(error: str | None) -> str | None:
    """``error`` cut to ``models.RUN_ERROR_LENGTH`` characters."""
    if error is None or len(error) <= models.RUN_ERROR_LENGTH:
        return error
    return error[:models.RUN_ERROR_LENGTH - 3] + '...'


def add_many(session: orm.Session,
             runs: abc.Collection[rows.EndedRun]) -> None:
    """Add a row for each of ``runs``, its error cut to
    ``models.RUN_ERROR_LENGTH`` characters.

    One execution with the parameters of every row: SQLAlchemy sends them
    as one multi-row INSERT on each database. This is one statement per
    batch of results, beside the batch's other writes.
    """
    if runs:
        statements.execute(session, _INSERT, [
            dict(run._asdict(), error=bounded(run.error)) for run in runs])


_INSERT = sa.insert(_TABLE)

#: A row read back: named tuples of the table's columns.
_row: abc.Callable[[abc.Iterable[typing.Any]], rows.StepRun] = \
    statements.named_rows('StepRunRow', _TABLE)


def for_order(session: orm.Session, order_id: str) -> list[rows.StepRun]:
    """The runs of the order's steps, oldest first (by id: the order they
    were written in)."""
    return [_row(row) for row in statements.execute(session, (
        sa.select(*_TABLE.c).where(_TABLE.c.order_id == order_id)
        .order_by(_TABLE.c.id)))]
