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
             runs: abc.Collection[rows.StepRun]) -> None:
    """Add a row for each of ``runs``, its error cut to
    ``models.RUN_ERROR_LENGTH`` characters.

    One execution with the parameters of every row: SQLAlchemy sends them
    as one multi-row INSERT on each database. This is one statement per
    batch of results, beside the batch's other writes.
    """
    if runs:
        statements.execute(session, _INSERT, [
            dict(zip(_COLUMNS, run._replace(error=bounded(run.error))))
            for run in runs])


#: The columns of a ``rows.StepRun`` but its id, which the database gives.
_COLUMNS = rows.StepRun._fields[:-1]
_INSERT = sa.insert(_TABLE)
_SELECT = sa.select(*(_TABLE.c[name] for name in rows.StepRun._fields))


def for_order(session: orm.Session, order_id: str) -> list[rows.StepRun]:
    """The runs of the order's steps, oldest first (by id: the order they
    were written in)."""
    return [rows.StepRun(*row) for row in statements.execute(session, (
        _SELECT.where(_TABLE.c.order_id == order_id)
        .order_by(_TABLE.c.id)))]
