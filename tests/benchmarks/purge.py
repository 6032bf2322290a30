"""Issue 28: rows purged per second, and the worker pool beside a purge.

- ``rate``: a table of N finished orders (ACTIVE, ERROR and CANCELLED in
  turn), each with its two steps DONE and two history rows
  (``order_step_runs``), all last changed ten days ago, plus N / 10
  orders of each kind that stay (PENDING ten days old, finished an hour
  ago). Bulk-loaded inside the database (``generate_series`` on
  PostgreSQL, a recursive CTE on SQLite), then purged by the code of
  ``db purge --older-than 1`` (``scheduler.purge``, 1000 orders a
  transaction). Rows/s = every row deleted (orders, steps, history) over
  the purge's seconds. N = 1,000,000 on PostgreSQL in the full run.
- ``pool``: the worker pool's whole certificate orders per second
  (``tests.benchmarks.worker_pool``, 2 processes, PostgreSQL), on a
  database holding a table of old finished orders as above: once with a
  purge of them running beside the pool in this process (from the first
  cast to the last order ACTIVE), once without, side by side. The purge
  deletes only the old orders; the pool's are young.
"""

import contextlib
import datetime
import threading
import time

from oslo_utils import timeutils

from scheduler import purge
from tests.benchmarks import env
from tests.benchmarks import worker_pool
from worker.db import models

#: Orders per transaction: ``db purge``'s default.
BATCH = purge.DEFAULT_BATCH_SIZE
_DAY_US = 86400 * 10 ** 6


def load(database, count, statuses=models.PURGEABLE_STATUSES):
    """Bulk-load ``count`` old finished orders with their rows, and
    ``count`` / 10 of each kind that a purge keeps; one transaction.

    :param statuses: the finished statuses the orders have, in turn.
    """
    now = timeutils.utcnow()
    dialect = database.engine.dialect.name
    params = {'last': count, 'kept': count // 10, 'now_us': int(
        (now - _EPOCH).total_seconds() * 10 ** 6)}
    params.update(('s%d' % index, statuses[index % len(statuses)])
                  for index in range(3))
    connection = database.engine.raw_connection()
    try:
        cursor = connection.cursor()
        for statement in _STATEMENTS[dialect]:
            cursor.execute(statement, params)
        cursor.close()
        connection.commit()
    finally:
        connection.close()
    if dialect == 'postgresql':
        with database.engine.connect().execution_options(
                isolation_level='AUTOCOMMIT') as connection:
            for table in ('orders', 'order_steps', 'order_step_runs'):
                connection.exec_driver_sql('VACUUM ANALYZE %s' % table)


def measure_rate(backend, count, workdir, log):
    """Purge ``count`` old finished orders on ``backend``; figures."""
    with env.database(backend, workdir) as (_, database):
        started = time.monotonic()
        load(database, count)
        loaded = time.monotonic() - started
        log('purge: %d finished orders loaded on %s in %.1fs', count,
            backend, loaded)
        before = purge.cutoff(timeutils.utcnow(), 1)
        started = time.monotonic()
        counts = purge.purge(database, models.PURGEABLE_STATUSES, before,
                             BATCH)
        seconds = time.monotonic() - started
        left = purge.count(database, models.PURGEABLE_STATUSES, before)
        kept = _count_orders(database)
    log('purge: %d rows (%d orders) in %.1fs on %s', counts.rows,
        counts.orders, seconds, backend)
    return {'backend': backend, 'orders': count, 'load_seconds': loaded,
            'deleted': counts.__dict__, 'rows': counts.rows,
            'seconds': seconds, 'rate': counts.rows / seconds,
            'order_rate': counts.orders / seconds, 'left': left.rows,
            'kept': kept, 'expected_kept': 4 * (count // 10)}


def _count_orders(database):
    with database.engine.connect() as connection:
        return connection.exec_driver_sql(
            'SELECT count(*) FROM orders').scalar()


class _Beside:
    """A purge of the old orders in a thread, from the first cast of a
    ``worker_pool.measure`` run to its end."""

    def __init__(self, database):
        self._database = database
        self._stop = threading.Event()
        self._thread = None
        self.counts = purge.Counts()
        self.seconds = 0.0

    def __enter__(self):
        self._thread = threading.Thread(target=self._run)
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()

    def _run(self):
        started = time.monotonic()
        self.counts = purge.purge(
            self._database, models.PURGEABLE_STATUSES,
            purge.cutoff(timeutils.utcnow(), 1), BATCH,
            go_on=lambda session: not self._stop.is_set())
        self.seconds = time.monotonic() - started


def measure_pool(transport_url, orders, finished, workdir, log):
    """Orders/s of 2 worker processes, with and without a purge of
    ``finished`` old orders beside them; figures of both.

    The old orders are ERROR and CANCELLED only: the pool's are counted
    by their status, ACTIVE.
    """
    results = {}
    for variant in ('without', 'with'):
        beside = []

        def during(database, beside=beside, variant=variant):
            if variant == 'without':
                return contextlib.nullcontext()
            beside.append(_Beside(database))
            return beside[0]
        figures = worker_pool.measure(
            transport_url, orders, 2, workdir, log,
            prepare=lambda database: load(database, finished,
                                          (models.ERROR, models.CANCELLED)),
            during=during)
        if beside:
            figures['purged_rows'] = beside[0].counts.rows
            figures['purged_orders'] = beside[0].counts.orders
            figures['purge_seconds'] = beside[0].seconds
        results[variant] = figures
        log('pool %s a purge: %.1f orders/s', variant, figures['rate'])
    return results


def run(transport_url, workdir, quick, log):
    """Rows purged/s; orders/s beside a purge; returns the figures."""
    big = 20000 if quick else 1000000
    return {
        'rate_postgresql': measure_rate('postgresql', big, workdir, log),
        'rate_sqlite': measure_rate('sqlite', 20000 if quick else 100000,
                                    workdir, log),
        'pool': measure_pool(transport_url, 300 if quick else 3000,
                             20000 if quick else 200000, workdir, log),
    }


_EPOCH = datetime.datetime(1970, 1, 1)

# The rows: ``g`` from 1 to ``last`` are old finished orders, ten days
# old, their statuses ``s0``, ``s1``, ``s2`` in turn; then ``kept``
# PENDING ones as old, and 3 * ``kept`` finished an hour ago. Each has
# two steps DONE and two history rows.
_STATUS = """
    CASE WHEN g > {last} AND g <= {last} + {kept} THEN 'PENDING'
         ELSE CASE g {mod} 3 WHEN 0 THEN {s0} WHEN 1 THEN {s1}
                             ELSE {s2} END END
"""
_AGE_US = """
    CASE WHEN g <= {last} + {kept} THEN 10 * %d ELSE 3600000000 END
""" % _DAY_US
_POSTGRESQL_NAMES = {name: '%%(%s)s' % name
                     for name in ('last', 'kept', 's0', 's1', 's2')}
_POSTGRESQL_ORDERS = ("""
    INSERT INTO orders (id, type, status, meta, created_at, updated_at)
    SELECT 'p' || lpad(g::text, 12, '0'), 'certificate', """ + _STATUS + """,
           '{{}}', at, at
    FROM generate_series(1, {last} + 4 * {kept}) AS g,
         LATERAL (SELECT TIMESTAMP '1970-01-01'
                      + (%(now_us)s - """ + _AGE_US + """)
                      * INTERVAL '1 microsecond' AS at) AS t
""").format(mod='%%', **_POSTGRESQL_NAMES)
_STEP_NAMES = """
    (SELECT 'process_type_order' AS name
     UNION ALL SELECT 'check_certificate_status') AS s
"""
_STEPS = """
    INSERT INTO order_steps (order_id, name, status, generation, attempt,
                             failures, polls, started_at, finished_at,
                             updated_at)
    SELECT o.id, s.name, 'DONE', 1, 1, 0, 0, o.updated_at, o.updated_at,
           o.updated_at
    FROM orders AS o, """ + _STEP_NAMES
_RUNS = """
    INSERT INTO order_step_runs (order_id, step, generation, attempt,
                                 worker, started_at, finished_at, result)
    SELECT o.id, s.name, 1, 1, '1@bench', o.updated_at, o.updated_at, 'done'
    FROM orders AS o, """ + _STEP_NAMES

# NOTE: SQLite keeps datetimes as 'YYYY-MM-DD HH:MM:SS.ffffff' text and
# compares them as text: the values must have that exact shape.
_SQLITE_AT = """
    strftime('%Y-%m-%d %H:%M:%S', at_us / 1000000, 'unixepoch')
        || printf('.%06d', at_us % 1000000)
"""
_SQLITE_NAMES = {name: ':' + name for name in ('last', 'kept', 's0', 's1',
                                               's2')}
_SQLITE_ORDERS = ("""
    WITH RECURSIVE seq(g) AS (
        SELECT 1 UNION ALL SELECT g + 1 FROM seq
        WHERE g < {last} + 4 * {kept}),
    made(g, status, at_us) AS (
        SELECT g, """ + _STATUS + """, :now_us - """ + _AGE_US + """
        FROM seq)
    INSERT INTO orders (id, type, status, meta, created_at, updated_at)
    SELECT 'p' || printf('%012d', g), 'certificate', status, '{{}}',
           """ + _SQLITE_AT + """, """ + _SQLITE_AT + """
    FROM made
""").format(mod='%', **_SQLITE_NAMES)

_STATEMENTS = {
    'postgresql': (_POSTGRESQL_ORDERS, _STEPS, _RUNS),
    'sqlite': (_SQLITE_ORDERS, _STEPS, _RUNS),
}
