"""Core statements on a session's connection, for the worker's hot path.

A step's claim and result are a few single-row UPDATEs and DELETEs. Sent
through ``Session.execute``, each pays for the ORM's execute layer
(autoflush, ORM compile state, bulk-update bookkeeping) and for
expressions built from mapped attributes: together about half of a
worker's CPU per step. These statements touch no ORM object, so they go
straight to the transaction's connection, built from the tables' columns.
The hottest are built once, with bound parameters (``setting``,
``where``), and executed with the values of each call: building the
expression again each time cost as much as running it.
"""

import sqlalchemy as sa

from worker.db import models

#: The tables, for statements built from their columns.
ORDERS = models.Order.__table__
STEPS = models.OrderStep.__table__
RETRY_TASKS = models.OrderRetryTask.__table__


def execute(session, statement, parameters=None):
    """Run ``statement`` in the session's transaction; returns the result.

    Only for statements whose rows are not ORM objects: the session is
    neither flushed first nor told of what changed.
    """
    return session.connection().execute(statement, parameters)


def update_many(session, statement_of, updates, now):
    """Run updates that set different sets of columns: one execution per
    set, with the parameters of all its rows (``executemany``).

    :param statement_of: the UPDATE that sets a set of columns, from
        their sorted names (each set with ``setting``).
    :param updates: ``[(values, where parameters), ...]``; ``updated_at``
        is set to ``now`` too.
    :returns: how many rows were updated in all (every driver used here
        sums an executemany's row counts).
    """
    by_columns: dict = {}
    for values, where in updates:
        values = dict(values, updated_at=now)
        parameters = set_parameters(values)
        parameters.update(where)
        by_columns.setdefault(tuple(sorted(values)), []).append(parameters)
    return sum(execute(session, statement_of(columns), parameters).rowcount
               for columns, parameters in by_columns.items())


def setting(table, names):
    """``{column: parameter}`` to SET each of ``names`` from the parameter
    ``set_<name>``.

    The names of a table's columns are taken, in an UPDATE, by the values
    of its SET clause: the parameters need names of their own.
    """
    return {table.c[name]: sa.bindparam('set_' + name,
                                        type_=table.c[name].type)
            for name in names}


def set_parameters(values):
    """The parameters of ``setting``'s SET clause for ``values``."""
    return {'set_' + name: value for name, value in values.items()}


def where(column):
    """``column = :where_<name>``."""
    return column == sa.bindparam('where_' + column.name, type_=column.type)
