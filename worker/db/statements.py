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

import collections
import collections.abc as abc
import datetime
import typing

import sqlalchemy as sa
from sqlalchemy import orm

from worker.db import batch_rows
from worker.db import models

Any = typing.Any

# NOTE: a declarative class's ``__table__`` is typed as any FROM clause;
# it is the class's ``Table``.
#: The tables, for statements built from their columns.
ORDERS = typing.cast(sa.Table, models.Order.__table__)
STEPS = typing.cast(sa.Table, models.OrderStep.__table__)
RETRY_TASKS = typing.cast(sa.Table, models.OrderRetryTask.__table__)

#: A statement's parameters: one row's, or a row's each (executemany).
Parameters = abc.Mapping[str, Any] | abc.Sequence[abc.Mapping[str, Any]]
#: What ``execute_many`` runs once a row: a write.
Write = batch_rows.Write
#: The result of a statement, of any columns.
Result = sa.CursorResult[typing.Unpack[tuple[Any, ...]]]


def execute(session: orm.Session, statement: sa.Executable,
            parameters: Parameters | None = None) -> Result:
    """Run ``statement`` in the session's transaction; returns the result.

    Only for statements whose rows are not ORM objects: the session is
    neither flushed first nor told of what changed.
    """
    return session.connection().execute(statement, parameters)


def changed(session: orm.Session, statement: sa.Executable) -> int:
    """Run an UPDATE or DELETE through the session (its ORM layer, for a
    statement on a mapped entity); returns how many rows it changed."""
    result = session.execute(statement)
    return typing.cast(Result, result).rowcount


def execute_many(session: orm.Session, statement: Write,
                 rows: abc.Sequence[abc.Mapping[str, Any]]) -> int:
    """Run ``statement`` once for each of ``rows`` (its parameters);
    returns how many rows it changed in all.

    On PostgreSQL and MariaDB, several rows go in one execution
    (``worker.db.batch_rows``: over arrays, or over a derived table of the
    rows, ``batch_rows.MOST_ROWS`` at most in one statement). The
    statement then changes every row that one of the executions would
    have changed, each only once; its row count is the count of those
    rows, so a fenced write is counted as before (a row given twice is
    counted once: the caller finds fewer than it asked for, as if one had
    moved on). Elsewhere (SQLite, MySQL) this is an ``executemany``,
    whose row count the driver sums over its rows (the contract tests
    check it).
    """
    if not rows:
        return 0
    connection = session.connection()
    at_once = _at_once(connection.dialect)
    if len(rows) == 1 or at_once is None:
        return connection.execute(statement, rows).rowcount
    return sum(connection.execute(many, parameters).rowcount
               for many, parameters in at_once(statement, rows))


def executes_many_at_once(session: orm.Session) -> bool:
    """Whether ``execute_many`` runs its rows in one execution here."""
    return _at_once(session.connection().dialect) is not None


def _at_once(dialect: sa.Dialect) -> abc.Callable[
        [Write, abc.Sequence[abc.Mapping[str, Any]]],
        list[batch_rows.Execution]] | None:
    """The form of ``execute_many``'s one execution on ``dialect``, if it
    has one. MariaDB's is its own (``VALUES`` without ``ROW``), which
    MySQL does not read: SQLAlchemy names both ``mysql`` through a
    ``mysql+`` URL, and tells them apart once connected."""
    if dialect.name == 'postgresql':
        return batch_rows.over_arrays
    if getattr(dialect, 'is_mariadb', False):
        return batch_rows.over_rows
    return None


#: ``update_many``'s updates: ``(values, where parameters)``.
Update = tuple[abc.Mapping[str, Any], abc.Mapping[str, Any]]


def update_many(session: orm.Session,
                statement_of: abc.Callable[[tuple[str, ...]], Write],
                updates: abc.Iterable[Update],
                now: datetime.datetime) -> int:
    """Run updates that set different sets of columns: one execution per
    set, with the parameters of all its rows (``execute_many``).

    :param statement_of: the UPDATE that sets a set of columns, from
        their sorted names (each set with ``setting``).
    :param updates: ``[(values, where parameters), ...]``; ``updated_at``
        is set to ``now`` too.
    :returns: how many rows were updated in all.
    """
    by_columns: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for values, where in updates:
        values = dict(values, updated_at=now)
        parameters = set_parameters(values)
        parameters.update(where)
        by_columns.setdefault(tuple(sorted(values)), []).append(parameters)
    return sum(execute_many(session, statement_of(columns), rows)
               for columns, rows in by_columns.items())


def setting(table: sa.Table, names: abc.Iterable[str]
            ) -> dict[sa.Column[Any], sa.BindParameter[Any]]:
    """``{column: parameter}`` to SET each of ``names`` from the parameter
    ``set_<name>``.

    The names of a table's columns are taken, in an UPDATE, by the values
    of its SET clause: the parameters need names of their own.
    """
    return {table.c[name]: sa.bindparam('set_' + name,
                                        type_=table.c[name].type)
            for name in names}


def set_parameters(values: abc.Mapping[str, Any]) -> dict[str, Any]:
    """The parameters of ``setting``'s SET clause for ``values``."""
    return {'set_' + name: value for name, value in values.items()}


def named_rows(name: str, table: sa.Table
               ) -> abc.Callable[[abc.Iterable[Any]], Any]:
    """A maker of ``table``'s rows as named tuples (class ``name``, the
    columns their attributes) from their values: rows read as columns,
    without ORM objects.

    Typed by its caller as a maker of the row's protocol
    (``worker.db.rows``): the fields come from the table at run time,
    which mypy cannot read.
    """
    named_tuple: abc.Callable[..., Any] = collections.namedtuple
    make: abc.Callable[[abc.Iterable[Any]], Any] = named_tuple(
        name, table.c.keys())._make
    return make


def where(column: sa.Column[Any]) -> sa.ColumnElement[bool]:
    """``column = :where_<name>``."""
    return column == sa.bindparam('where_' + column.name, type_=column.type)
