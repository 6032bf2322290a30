"""Bulk loading of orders, their steps and retry rows, for 1,000,000 rows.

Rows are generated inside the database (``generate_series`` on
PostgreSQL, a recursive CTE on SQLite, the sequence engine's
``seq_1_to_N`` on MariaDB), one statement per table (and per step) in one
transaction: going through the ORM would take longer than the
measurements themselves. What is written is what the worker would write
(``worker.steps.outcomes``) for a certificate order waiting at one step: a
PENDING order, its steps (those before the step DONE, the step PENDING,
those after it WAITING), and one retry row naming a step, whose args are
``[order_id]`` and kwargs ``{"generation": G}`` with G the step's
generation.

Order ids are ``<prefix><12 digits>``; row ``i`` (from 1) is due at
``start + (i - 1) * spacing``, so a measurement can tell each row's
``retry_at`` from its order id.
"""

import dataclasses
import datetime
import typing
import uuid

_EPOCH = datetime.datetime(1970, 1, 1)

#: The certificate order type's steps, in workflow order.
CERTIFICATE_STEPS = ('process_type_order', 'check_certificate_status')


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
    """Insert ``count`` PENDING certificate orders, their steps and (if
    ``retries``) their retry rows.

    :param database: a ``worker.db.session.Database``.
    :param start: ``retry_at`` of the first row (naive UTC).
    :param spacing: seconds between the ``retry_at`` of consecutive rows.
    :param step: the step the orders are at: PENDING, waiting for its
        retry row (or, without ``retries``, counted as dispatched at
        ``start``); the steps before it are DONE, those after it WAITING.
    :param retry_task: the step the retry rows name, at its generation. A
        step after ``step`` is WAITING: the worker drops its casts as
        stale, after one read (a no-op row).
    :param analyze: on PostgreSQL, VACUUM ANALYZE afterwards (on MariaDB,
        ANALYZE TABLE), the state autovacuum (InnoDB's statistics) reaches
        soon after a bulk load; without it the planner works from an empty
        table's statistics.
    :returns: a ``Batch``.
    """
    if step not in CERTIFICATE_STEPS or retry_task not in CERTIFICATE_STEPS:
        raise ValueError('not a step of the certificate type: %s, %s'
                         % (step, retry_task))
    batch = Batch(prefix or new_prefix(), count, start, spacing)
    dialect = database.engine.dialect.name
    # SQLite stores datetimes as text of this exact shape (see below).
    now = (start.strftime('%Y-%m-%d %H:%M:%S.%f') if dialect == 'sqlite'
           else start)
    steps = _step_rows(step, now, dispatched=not retries)
    params = {
        'prefix': batch.prefix, 'last': count, 'task': retry_task,
        'generation': steps[retry_task]['generation'], 'now': now,
        'start_us': int((start - _EPOCH).total_seconds() * 1e6),
        'spacing_us': int(spacing * 1e6),
    }
    statements = _STATEMENTS[dialect]
    if dialect == 'mysql':
        # The sequence table's name holds the count; nothing else can.
        statements = _Statements(*(
            statement.replace('SEQUENCE', 'seq_1_to_%d' % int(count))
            for statement in statements))
    connection = database.engine.raw_connection()
    try:
        cursor = connection.cursor()
        cursor.execute(statements.orders, params)
        for values in steps.values():
            cursor.execute(statements.steps, dict(params, **values))
        if retries:
            cursor.execute(statements.retries, params)
        cursor.close()
        connection.commit()
    finally:
        connection.close()
    if analyze:
        _ANALYZE.get(dialect, lambda _: None)(database)
    return batch


def _step_rows(step, now, dispatched):
    """``{name: column values}`` of the steps of an order at ``step``.

    A DONE step was claimed once (generation 1) and ended at ``now``.
    """
    at = CERTIFICATE_STEPS.index(step)
    rows = {}
    for index, name in enumerate(CERTIFICATE_STEPS):
        done = index < at
        rows[name] = {
            'name': name,
            'status': ('DONE' if done else
                       'PENDING' if index == at else 'WAITING'),
            'generation': 1 if done else 0,
            'ended_at': now if done else None,
            'output': '{}' if done else None,
            'dispatched_at': now if index == at and dispatched else None,
        }
    return rows


def vacuum_analyze(database):
    """VACUUM ANALYZE the tables (PostgreSQL; outside a transaction)."""
    with database.engine.connect().execution_options(
            isolation_level='AUTOCOMMIT') as connection:
        connection.exec_driver_sql('VACUUM ANALYZE orders')
        connection.exec_driver_sql('VACUUM ANALYZE order_steps')
        connection.exec_driver_sql('VACUUM ANALYZE order_retry_tasks')


def count_rows(database, table='order_retry_tasks'):
    """Number of rows in ``table``."""
    with database.engine.connect() as connection:
        return connection.exec_driver_sql(
            'SELECT count(*) FROM %s' % table).scalar()


class _Statements(typing.NamedTuple):
    orders: str
    steps: str
    retries: str


_POSTGRESQL = _Statements(
    """
    INSERT INTO orders (id, type, status, meta, created_at, updated_at)
    SELECT %(prefix)s || lpad(g::text, 12, '0'), 'certificate', 'PENDING',
           '{}', %(now)s, %(now)s
    FROM generate_series(1, %(last)s) AS g
    """,
    """
    INSERT INTO order_steps (order_id, name, status, generation, attempt,
                             failures, polls, dispatched_at, started_at,
                             finished_at, output, updated_at)
    SELECT %(prefix)s || lpad(g::text, 12, '0'), %(name)s, %(status)s,
           %(generation)s, %(generation)s, 0, 0, %(dispatched_at)s,
           %(ended_at)s, %(ended_at)s, %(output)s, %(now)s
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
           '{"generation": ' || %(generation)s || '}', 0, false, %(now)s
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
_SQLITE = _Statements(
    _SQLITE_SEQ + """
    INSERT INTO orders (id, type, status, meta, created_at, updated_at)
    SELECT :prefix || printf('%012d', g), 'certificate', 'PENDING', '{}',
           :now, :now
    FROM seq
    """,
    _SQLITE_SEQ + """
    INSERT INTO order_steps (order_id, name, status, generation, attempt,
                             failures, polls, dispatched_at, started_at,
                             finished_at, output, updated_at)
    SELECT :prefix || printf('%012d', g), :name, :status, :generation,
           :generation, 0, 0, :dispatched_at, :ended_at, :ended_at, :output,
           :now
    FROM seq
    """,
    _SQLITE_SEQ + """
    INSERT INTO order_retry_tasks (order_id, retry_task, retry_at,
                                   retry_args, retry_kwargs, retry_count,
                                   parked, created_at)
    SELECT :prefix || printf('%012d', g), :task, """ + _SQLITE_TIME + """,
           '["' || :prefix || printf('%012d', g) || '"]',
           '{"generation": ' || :generation || '}', 0, 0, :now
    FROM seq
    """,
)

# NOTE: PyMySQL formats its parameters with %, so these statements may
# hold no other % sign. SEQUENCE becomes seq_1_to_<count> (see load).
_MYSQL = _Statements(
    """
    INSERT INTO orders (id, type, status, meta, created_at, updated_at)
    SELECT CONCAT(%(prefix)s, LPAD(seq, 12, '0')), 'certificate', 'PENDING',
           '{}', %(now)s, %(now)s
    FROM SEQUENCE
    """,
    """
    INSERT INTO order_steps (order_id, name, status, generation, attempt,
                             failures, polls, dispatched_at, started_at,
                             finished_at, output, updated_at)
    SELECT CONCAT(%(prefix)s, LPAD(seq, 12, '0')), %(name)s, %(status)s,
           %(generation)s, %(generation)s, 0, 0, %(dispatched_at)s,
           %(ended_at)s, %(ended_at)s, %(output)s, %(now)s
    FROM SEQUENCE
    """,
    """
    INSERT INTO order_retry_tasks (order_id, retry_task, retry_at,
                                   retry_args, retry_kwargs, retry_count,
                                   parked, created_at)
    SELECT CONCAT(%(prefix)s, LPAD(seq, 12, '0')), %(task)s,
           TIMESTAMPADD(MICROSECOND, (seq - 1) * %(spacing_us)s, %(now)s),
           CONCAT('["', %(prefix)s, LPAD(seq, 12, '0'), '"]'),
           CONCAT('{"generation": ', %(generation)s, '}'), 0, false, %(now)s
    FROM SEQUENCE
    """,
)

_STATEMENTS = {'postgresql': _POSTGRESQL, 'sqlite': _SQLITE, 'mysql': _MYSQL}


def _analyze_table(database):
    with database.engine.connect() as connection:
        connection.exec_driver_sql(
            'ANALYZE TABLE orders, order_steps, order_retry_tasks').all()


_ANALYZE = {'postgresql': vacuum_analyze, 'mysql': _analyze_table}
