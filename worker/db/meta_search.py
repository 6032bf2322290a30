"""Equality on paths of an order's metadata, as SQL of each database.

A ``MetaFilter`` is a path of keys (``('issuer', 'name')``) and a JSON
scalar; an order matches when its ``meta`` holds that scalar at that
path, of the same JSON type: the number 3 matches 3 and 3.0, not the
string "3"; ``True`` matches ``true`` only; ``None`` matches an explicit
``null``, not a missing key. An array or an object at the path never
matches. The callers check the filters first (``worker.api.meta_filters``:
the keys' characters, the depth, the number of filters, the value's
size), so that a path can be written into the JSON path of a SQL
function without quoting surprises.

Why each database is asked so:

- PostgreSQL: ``CAST(meta AS JSONB) @> '{"issuer": {"name": "x"}}'``,
  which the GIN index ``ix_orders_meta_path_ops`` (``jsonb_path_ops`` over
  the same expression, migration 0018) serves: the column is ``json``,
  and the index is on its ``jsonb`` cast, so no row is rewritten. For a
  scalar at the path, containment is typed equality (an array holding the
  value does not contain it below the top level).
- MariaDB and MySQL: ``JSON_CONTAINS(meta, '"x"', '$."issuer"."name"')``
  and the path's ``JSON_TYPE`` not an array (which ``JSON_CONTAINS`` would
  search). No index can serve an arbitrary path (a generated column is
  one path); the other filters' indexes (project, type, status, the
  primary key of a keyset) bound the rows it reads.
- SQLite: ``json_type`` and ``json_extract`` at the path, likewise
  without an index.
"""

import json
import typing

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

#: SQLite's ``json_type`` of each Python scalar type: numbers of either
#: kind compare by value, as in PostgreSQL and MariaDB.
_SQLITE_TYPES = {str: ('text',), int: ('integer', 'real'),
                 float: ('integer', 'real')}


class MetaFilter(typing.NamedTuple):
    """An order's ``meta`` holds ``value`` (a JSON scalar) at ``path``
    (a tuple of keys)."""

    path: tuple[str, ...]
    value: str | int | float | bool | None


def clause(dialect: str, meta: typing.Any,
           filters: typing.Iterable[MetaFilter]) -> sa.ColumnElement[bool]:
    """The SQL condition that ``meta`` (the orders' meta column) satisfies
    every one of ``filters``, in the words of ``dialect`` (a SQLAlchemy
    dialect name)."""
    build = {'postgresql': _postgresql, 'mysql': _mysql,
             'mariadb': _mysql}.get(dialect, _sqlite)
    return sa.and_(sa.true(), *(build(meta, one) for one in filters))


def json_path(path: tuple[str, ...]) -> str:
    """``$."a"."b"``: the path with each key quoted, as MariaDB and SQLite
    read it (a key may hold a ``-``)."""
    return '$' + ''.join('."%s"' % key for key in path)


def nested(filter_: MetaFilter) -> dict:
    """``{"a": {"b": value}}`` of the path ``('a', 'b')``."""
    document: typing.Any = filter_.value
    for key in reversed(filter_.path):
        document = {key: document}
    return document


def _postgresql(meta, filter_):
    """Containment in the ``jsonb`` cast, which the GIN index serves."""
    return sa.cast(meta, postgresql.JSONB).op('@>')(
        sa.cast(sa.literal(json.dumps(nested(filter_))), postgresql.JSONB))


def _mysql(meta, filter_):
    """``JSON_CONTAINS`` at the path, an array at the path excluded."""
    path = json_path(filter_.path)
    return sa.and_(
        sa.func.json_contains(meta, json.dumps(filter_.value), path) == 1,
        sa.func.json_type(sa.func.json_extract(meta, path)) != 'ARRAY')


def _sqlite(meta, filter_):
    """``json_type`` (the JSON type) and ``json_extract`` (the value)."""
    path, value = json_path(filter_.path), filter_.value
    kind = sa.func.json_type(meta, path)
    if value is None:
        return kind == 'null'
    if isinstance(value, bool):
        return kind == ('true' if value else 'false')
    return sa.and_(kind.in_(_SQLITE_TYPES[type(value)]),
                   sa.func.json_extract(meta, path) == value)
