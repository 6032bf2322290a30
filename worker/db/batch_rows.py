"""A write's rows in one statement: the forms ``statements.execute_many``
runs a batch in, one per database that has one.

A write built for one row (``UPDATE ... WHERE key = :where_key``) is
turned into one that joins a table of the batch's rows, each of its row
parameters (``bindparam(name)`` with no value) a column of that table:

- PostgreSQL: ``unnest`` over one array per parameter (``over_arrays``):
  the statement is the same for any number of rows.
- MariaDB: a derived table of the rows (``over_rows``), joined
  in a multi-table UPDATE or DELETE. Before, a batch was an
  ``executemany``, which PyMySQL sends as one statement per row: a round
  trip each.

Either statement changes every row that one of the single-row executions
would have changed, each only once (a multi-table UPDATE updates a
matching row once, whatever the number of rows of the batch it matches),
and its row count is the count of those rows: a fenced write is counted
as it was, and a batch in which a stale generation changed nothing
changes fewer rows than it was given, which its caller checks.
"""

import collections.abc as abc
import functools
import typing

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.sql import elements
from sqlalchemy.sql import visitors

Any = typing.Any
#: A write that a batch runs once a row.
Write = sa.Update | sa.Delete
#: A statement of a batch, with its parameters (from the rows').
Execution = tuple[Write, dict[str, Any]]
#: A batch's rows: each row's parameters.
Rows = abc.Sequence[abc.Mapping[str, Any]]

#: The name of the batch's rows in its statement.
_ROWS = 'batch'
#: The most rows in one statement on MariaDB: a statement is built and
#: compiled once for each number of rows (rounded up, ``_bucket``), and
#: its text grows with them.
MOST_ROWS = 512


def over_arrays(statement: Write, rows: Rows) -> list[Execution]:
    """``statement`` and its parameters over ``rows`` as PostgreSQL's
    arrays (``_over_arrays``): one execution."""
    many, names = _over_arrays(statement)
    return [(many, {name: [row[name] for row in rows] for name in names})]


@functools.lru_cache(maxsize=64)
def _over_arrays(statement: Write) -> tuple[Write, list[str]]:
    """``statement`` with each named parameter taken from a row of
    ``unnest`` over one array per parameter: ``UPDATE ... FROM unnest(...)``
    or ``DELETE ... USING unnest(...)`` (PostgreSQL).

    Returns the statement and the names of its array parameters. Only the
    parameters made with ``bindparam(name)`` and no value are rows'
    values; literals in the statement stay as they are. Cached by
    statement: the statements given here are each built once.
    """
    types = _row_parameters(statement)
    names = sorted(types)
    # One dimension: SQLAlchemy then takes each array as it is, without
    # looking into it for nested ones.
    arrays = [sa.bindparam(
        name, type_=postgresql.ARRAY(types[name], dimensions=1))
        for name in names]
    rows = sa.func.unnest(*arrays).table_valued(*(
        sa.column(name, types[name]) for name in names)).render_derived(
            name=_ROWS)
    return _from_rows(statement, rows), names


def over_rows(statement: Write, rows: Rows) -> list[Execution]:
    """``statement`` and its parameters over ``rows`` as a derived table
    (MariaDB; ``_over_rows``): one execution for each
    ``MOST_ROWS`` rows."""
    return [_over_some_rows(statement, rows[start:start + MOST_ROWS])
            for start in range(0, len(rows), MOST_ROWS)]


def _over_some_rows(statement: Write, rows: Rows) -> Execution:
    """One execution of ``over_rows``.

    The rows are padded to a bucket's size with copies of the last one: a
    statement is built for each bucket, not for each number of rows, and a
    row given twice changes and counts as once.
    """
    size = _bucket(len(rows))
    many, names = _over_rows(statement, size)
    padded = list(rows) + [rows[-1]] * (size - len(rows))
    return many, {'%s_%d' % (name, index): row[name]
                  for index, row in enumerate(padded) for name in names}


def _bucket(count: int) -> int:
    """The number of rows of the statement that runs ``count`` rows: the
    next power of two. A row of padding costs the server little; a
    statement of each size costs SQLAlchemy a compilation in each process
    and its cache a place."""
    return 1 << max(count - 1, 0).bit_length()


@functools.lru_cache(maxsize=256)
def _over_rows(statement: Write, size: int) -> tuple[Write, list[str]]:
    """``statement`` joined to a derived table of ``size`` rows whose
    columns are its named parameters (``_rows``): ``UPDATE t, (SELECT :a_0
    AS a, ... UNION ALL VALUES (:a_1, ...), ...) AS batch SET ... WHERE
    t.k = batch.k``, the multi-table UPDATE or DELETE that SQLAlchemy
    renders for MySQL and MariaDB.

    Returns the statement and the names of the rows' parameters; the
    parameter of a row's column is ``<name>_<row>``.
    """
    types = _row_parameters(statement)
    names = sorted(types)
    return _from_rows(statement, _rows(types, names, size)), names


def _rows(types: abc.Mapping[str, Any], names: abc.Sequence[str],
          size: int) -> sa.FromClause:
    """``(SELECT :a_0 AS a, ... UNION ALL VALUES (:a_1, ...), ...) AS
    batch``: a table value constructor whose first row names its columns,
    each parameter typed as the column it stands for.

    Text, with typed parameters and columns: SQLAlchemy's ``sa.values``
    renders ``(VALUES ...) AS batch (a, ...)``, whose column list MariaDB
    takes only from 11.7 (Debian 12 ships 10.11; a bare ``VALUES`` names
    its columns after its first row's values), and SQLAlchemy 2 caches no
    statement with a ``VALUES`` (it compiles it at every execution). A
    ``UNION ALL`` of ``sa.select`` for each row is cached, but compiles
    four times slower, once for each size in each process: about 20 ms for
    64 rows, which a short-lived pool pays several times over.

    The values are not CAST to their columns' types: a CAST gives a
    string the connection's collation, which MariaDB refuses to compare
    with a column of the table's (``Illegal mix of collations``), where a
    literal takes the column's, and the primary key still finds each row.
    """
    def row(index: int) -> list[str]:
        return [':%s_%d' % (name, index) for name in names]
    # Quoted: a parameter's name may be a reserved word.
    text = 'SELECT ' + ', '.join('%s AS `%s`' % (value, name)
                                 for value, name in zip(row(0), names))
    if size > 1:
        text += ' UNION ALL VALUES ' + ', '.join(
            '(%s)' % ', '.join(row(index)) for index in range(1, size))
    return sa.text(text).bindparams(*(
        sa.bindparam('%s_%d' % (name, index), type_=types[name])
        for index in range(size) for name in names)).columns(*(
            sa.column(name, types[name]) for name in names)).subquery(_ROWS)


def _row_parameters(statement: Write) -> dict[str, Any]:
    """The statement's row parameters: ``{name: type}``."""
    return {element.key: element.type
            for element in visitors.iterate(statement)
            if _is_row_parameter(element)}


def _from_rows(statement: Write, rows: sa.FromClause) -> Write:
    """``statement`` with each row parameter replaced by its column of
    ``rows``: SQLAlchemy adds ``rows`` to the FROM (UPDATE ... FROM,
    DELETE ... USING) of the dialect."""
    def column_of(element: visitors.ExternallyTraversible,
                  **kw: Any) -> sa.ColumnElement[Any] | None:
        if _is_row_parameter(element):
            return rows.c[element.key]
        return None
    return typing.cast(
        Write, visitors.replacement_traverse(statement, {}, column_of))


def _is_row_parameter(element: object
                      ) -> typing.TypeGuard[elements.BindParameter[Any]]:
    return isinstance(element, elements.BindParameter) and element.required
