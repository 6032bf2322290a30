"""Bulk loading of orders and retry rows, fast enough for 1,000,000 rows.

Rows are generated inside the database (``generate_series`` on
PostgreSQL, a recursive CTE on SQLite), one statement per table in one
transaction: going through the ORM would take longer than the
measurements themselves. What is written is exactly what the worker would
write (``worker.manager.WorkerManager._schedule``): a PENDING order at the
retried step and one retry row whose args are ``[order_id]`` and kwargs
``{"generation": 0}``.

Order ids are ``<prefix><12 digits>``; row ``i`` (from 1) is due at
``start + (i - 1) * spacing``, so a measurement can tell each row's
``retry_at`` from its order id.
"""

import dataclasses
import datetime
import uuid

_EPOCH = datetime.datetime(1970, 1, 1)


@dataclasses.dataclass(frozen=True)
class Batch:
    """Rows loaded by one call of ``load``."""

    prefix: str
    count: int
    start: datetime.datetime
    spacing: float

    def order_id(self, index):
        """Order id of row ``index`` (from 1)."""
        return '%s%012d' % (self.prefix, index)

    def retry_at(self, order_id):
        """``retry_at`` of the row of ``order_id``."""
        index = int(order_id[len(self.prefix):])
        return self.start + datetime.timedelta(
            seconds=(index - 1) * self.spacing)


def new_prefix():
    """An order-id prefix unique to one load."""
    return 'b%s-' % uuid.uuid4().hex[:8]


def load(database, count, start, spacing=0.0, step='check_certificate_status',
         retry_task='check_certificate_status', prefix=None, retries=True,
         analyze=True):
    """Insert ``count`` PENDING orders and (if ``retries``) their retry rows.

    :param database: a ``worker.db.session.Database``.
    :param start: ``retry_at`` of the first row (naive UTC).
    :param spacing: seconds between the ``retry_at`` of consecutive rows.
    :param step: the step the orders wait for (``Order.step``).
    :param analyze: on PostgreSQL, VACUUM ANALYZE afterwards, the state
        autovacuum reaches soon after a bulk load; without it the planner
        works from an empty table's statistics.
    :returns: a ``Batch``.
    """
    batch = Batch(prefix or new_prefix(), count, start, spacing)
    dialect = database.engine.dialect.name
    params = {
        'prefix': batch.prefix, 'last': count, 'step': step,
        'task': retry_task, 'now': start,
        'start_us': int((start - _EPOCH).total_seconds() * 1e6),
        'spacing_us': int(spacing * 1e6),
    }
    statements = (_POSTGRESQL if dialect == 'postgresql' else _SQLITE)
    connection = database.engine.raw_connection()
    try:
        cursor = connection.cursor()
        cursor.execute(statements[0], params)
        if retries:
            cursor.execute(statements[1], params)
        cursor.close()
        connection.commit()
    finally:
        connection.close()
    if analyze and dialect == 'postgresql':
        vacuum_analyze(database)
    return batch


def vacuum_analyze(database):
    """VACUUM ANALYZE both tables (PostgreSQL; outside a transaction)."""
    with database.engine.connect().execution_options(
            isolation_level='AUTOCOMMIT') as connection:
        connection.exec_driver_sql('VACUUM ANALYZE orders')
        connection.exec_driver_sql('VACUUM ANALYZE order_retry_tasks')


def count_rows(database, table='order_retry_tasks'):
    """Number of rows in ``table``."""
    with database.engine.connect() as connection:
        return connection.exec_driver_sql(
            'SELECT count(*) FROM %s' % table).scalar()


_POSTGRESQL = (
    """
    INSERT INTO orders (id, type, status, meta, generation, step, attempt,
                        created_at, updated_at)
    SELECT %(prefix)s || lpad(g::text, 12, '0'), 'certificate', 'PENDING',
           '{}', 0, %(step)s, 0, %(now)s, %(now)s
    FROM generate_series(1, %(last)s) AS g
    """,
    """
    INSERT INTO order_retry_tasks (order_id, retry_task, retry_at,
                                   retry_args, retry_kwargs, retry_count,
                                   parked, created_at)
    SELECT %(prefix)s || lpad(g::text, 12, '0'), %(task)s,
           %(now)s::timestamp
               + (g - 1) * %(spacing_us)s * interval '1 microsecond',
           '["' || %(prefix)s || lpad(g::text, 12, '0') || '"]',
           '{"generation": 0}', 0, false, %(now)s
    FROM generate_series(1, %(last)s) AS g
    """,
)

# NOTE: SQLAlchemy stores SQLite datetimes as 'YYYY-MM-DD HH:MM:SS.ffffff'
# text and compares them as text, so the generated values must have that
# exact shape (six fraction digits) or "retry_at <= now" would misorder.
_SQLITE_SEQ = """
    WITH RECURSIVE seq(g) AS (
        SELECT 1 UNION ALL SELECT g + 1 FROM seq WHERE g < :last)
"""
_SQLITE_TIME = """
    strftime('%Y-%m-%d %H:%M:%S',
             (:start_us + (g - 1) * :spacing_us) / 1000000, 'unixepoch')
        || printf('.%06d', (:start_us + (g - 1) * :spacing_us) % 1000000)
"""
_SQLITE = (
    _SQLITE_SEQ + """
    INSERT INTO orders (id, type, status, meta, generation, step, attempt,
                        created_at, updated_at)
    SELECT :prefix || printf('%012d', g), 'certificate', 'PENDING', '{}', 0,
           :step, 0, """ + _SQLITE_TIME + ", " + _SQLITE_TIME + """
    FROM seq
    """,
    _SQLITE_SEQ + """
    INSERT INTO order_retry_tasks (order_id, retry_task, retry_at,
                                   retry_args, retry_kwargs, retry_count,
                                   parked, created_at)
    SELECT :prefix || printf('%012d', g), :task, """ + _SQLITE_TIME + """,
           '["' || :prefix || printf('%012d', g) || '"]',
           '{"generation": 0}', 0, 0, """ + _SQLITE_TIME + """
    FROM seq
    """,
)
