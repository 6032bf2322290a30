"""``GET /v1/orders?limit=100`` on a big table: seeding and query plans.

``seed`` writes ``count`` orders in one ``INSERT ... SELECT
generate_series`` (PostgreSQL): every second one of the project
``MANY`` (a project with half the table), the others spread over
``OTHER_PROJECTS`` projects; ``created_at`` one millisecond apart, so
that the project's orders are in creation order by their number. Only
``orders`` rows: a listing reads nothing else.

``plan`` asks PostgreSQL to EXPLAIN (ANALYZE) the statement a listing
runs (``worker.db.orders.list_orders``, as ``OrderAPI.list`` calls it),
for the first page and for the page after a marker deep in the
project's orders.
"""

import dataclasses
import datetime

from tests.benchmarks import seed as bench_seed
from worker.db import models
from worker.db import orders as orders_repository

MANY = 'bench-many'
OTHER_PROJECTS = 1000
INDEX = 'ix_orders_project_id_created_at'
PAGE = 100
#: How deep in the project's orders the deep page's marker is.
DEEP = 0.9

_SEED = """
    INSERT INTO orders (id, type, status, meta, project_id, created_at,
                        updated_at)
    SELECT %(prefix)s || lpad(g::text, 12, '0'), 'certificate', 'ACTIVE',
           '{}',
           CASE WHEN g %% 2 = 0 THEN %(many)s
                ELSE 'bench-other-' || (g %% %(others)s) END,
           %(start)s::timestamp + g * interval '1 millisecond',
           %(start)s::timestamp + g * interval '1 millisecond'
    FROM generate_series(1, %(count)s) AS g
"""


@dataclasses.dataclass(frozen=True)
class Seeded:
    """The orders ``seed`` wrote."""

    prefix: str
    count: int
    start: datetime.datetime

    def deep_marker(self):
        """``(id, created_at)`` of the ``MANY`` order ``DEEP`` into the
        project's orders."""
        number = 2 * max(1, int(DEEP * self.count // 2))
        return ('%s%012d' % (self.prefix, number),
                self.start + datetime.timedelta(milliseconds=number))


def seed(database, count):
    """Write ``count`` orders (``Seeded``); VACUUM ANALYZE afterwards, as
    autovacuum would soon after a bulk load."""
    start = datetime.datetime(2026, 1, 1)
    seeded = Seeded(bench_seed.new_prefix(), count, start)
    connection = database.engine.raw_connection()
    try:
        cursor = connection.cursor()
        cursor.execute(_SEED, {'prefix': seeded.prefix, 'many': MANY,
                               'others': OTHER_PROJECTS, 'start': start,
                               'count': count})
        cursor.close()
        connection.commit()
    finally:
        connection.close()
    bench_seed.vacuum_analyze(database)
    return seeded


def _statement(after):
    # The listing's own statement: sa.select built by the repository;
    # list_orders runs it at once, so capture it from a stand-in session.
    captured = []

    class _Capture:
        def scalars(self, query):
            captured.append(query)
            return ()
    orders_repository.list_orders(_Capture(), None, PAGE, project_id=MANY,
                                  after=after, with_meta=False)
    return captured[0]


def plan(database, after=None, bounded=False):
    """The plan PostgreSQL runs a listing page of ``MANY`` with (after
    the order ``after`` = ``(created_at, id)``, or the first page).

    ``bounded``: with ``created_at >= `` the marker's added, the range
    condition the index can start from (what the listing's ``OR`` alone
    does not give the planner): the page's cost for comparison.

    :returns: ``{'index', 'uses_index', 'sorts', 'rows_removed',
        'execution_ms', 'plan'}``;
        ``rows_removed``: the rows the index scan read and threw away
        (a page's cost beyond its own rows).
    """
    with database.engine.connect() as connection:
        statement = _statement(after)
        if bounded:
            statement = statement.where(models.Order.created_at >= after[0])
        sql = str(statement.compile(
            dialect=connection.dialect,
            compile_kwargs={'literal_binds': True}))
        lines = [row[0] for row in connection.exec_driver_sql(
            'EXPLAIN (ANALYZE, BUFFERS) ' + sql)]
    removed = sum(int(line.split(':')[1]) for line in lines
                  if 'Rows Removed by Filter' in line)
    executed = [float(line.split(':')[1].split()[0]) for line in lines
                if line.startswith('Execution Time')]
    return {'index': INDEX, 'uses_index': any(INDEX in line
                                              for line in lines),
            'sorts': any(line.strip().lstrip('-> ').startswith('Sort')
                         for line in lines),
            'rows_removed': removed,
            'execution_ms': executed[0] if executed else None,
            'plan': lines}
