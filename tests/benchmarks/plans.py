"""Issue 12's target 6: the plans of the retry daemon's reads, at size.

Each database is asked to EXPLAIN the statements a pass runs, as
``worker.db.retry_tasks`` builds them, on the table the pass cost was
just measured on (1,000,000 rows in a full run). Two moments: *now*,
when nothing is due (the idle pass), and *all due* (every row due, a
backlog a pass drains batch after batch). A plan is good when it reads
the retry rows by the index named for it and has no sort: the rows come
in index order and the database stops at the batch's limit, whatever the
table's size.
"""

import datetime

from oslo_utils import timeutils

from worker.db import bulk_orders
from worker.db import meta_search
from worker.db import models
from worker.db import orders
from worker.db import retry_tasks

#: A search by metadata (issue 45): on PostgreSQL the GIN index over the
#: metadata; elsewhere no index serves a path, and the listing reads the
#: project's orders in order (``ix_orders_project_id_created_at``), the
#: bulk action's keyset the primary key (through ``ix_orders_status`` on
#: MariaDB, which holds it).
META_FILTERS = (meta_search.MetaFilter(('ca',), 'acme'),)
META_INDEX = {'postgresql': 'ix_orders_meta_path_ops'}
DUE_INDEX = 'ix_order_retry_tasks_due'
PRIORITY_INDEX = 'ix_order_retry_tasks_priority_due'
_EXPLAIN = {'sqlite': 'EXPLAIN QUERY PLAN ', 'postgresql': 'EXPLAIN ',
            'mysql': 'EXPLAIN '}


def _statements(now, batch):
    """``{name: (statement, index it must read)}`` of a pass at ``now``."""
    level, reads = models.MIN_PRIORITY, retry_tasks.READS
    return {
        'any_due': (reads['any_due'](now), DUE_INDEX),
        'next_due_after': (reads['next_due_after'](now), DUE_INDEX),
        'due, first batch of a level': (
            reads['due_of_level'](now, level, batch), PRIORITY_INDEX),
        'due, next batch of a level': (
            reads['due_of_level'](now, level, batch, (level, now, 1)),
            PRIORITY_INDEX),
    }


def _plan_lines(connection, backend, statement):
    """The database's plan of ``statement``, one string per line."""
    # Values inlined, as psycopg2 and PyMySQL send the daemon's own (they
    # interpolate on the client): each database plans with the values.
    sql = str(statement.compile(dialect=connection.dialect,
                                compile_kwargs={'literal_binds': True}))
    result = connection.exec_driver_sql(_EXPLAIN[backend] + sql)
    if backend == 'sqlite':
        return [row[-1] for row in result]
    if backend == 'postgresql':
        return [row[0] for row in result]
    return ['table=%(table)s type=%(type)s key=%(key)s rows=%(rows)s '
            'extra=%(Extra)s' % row._mapping for row in result]


def _judge(backend, lines, index):
    """``(reads the index, sorts)`` of one plan."""
    text = '\n'.join(lines)
    if backend == 'sqlite':
        sorts = 'USE TEMP B-TREE' in text
    elif backend == 'postgresql':
        sorts = any(line.strip().lstrip('-> ').startswith('Sort')
                    for line in lines)
    else:
        sorts = 'filesort' in text
    return index in text, sorts


def explain(database, backend, batch):
    """The plans of a pass's reads, idle and with every row due.

    :returns: a list of ``{'moment', 'query', 'index', 'uses_index',
        'sorts', 'plan'}``.
    """
    now = timeutils.utcnow()
    moments = (('now', now),
               ('all due', now + datetime.timedelta(days=3650)))
    records = []
    with database.engine.connect() as connection:
        for moment, at in moments:
            for name, (statement, index) in _statements(at, batch).items():
                lines = _plan_lines(connection, backend, statement)
                uses_index, sorts = _judge(backend, lines, index)
                records.append({'moment': moment, 'query': name,
                                'index': index, 'uses_index': uses_index,
                                'sorts': sorts, 'plan': lines})
    return records


def _meta_statements(backend):
    """``{name: (statement, index it must read, sort allowed)}`` of the
    search by metadata: a listing page of one project, and a batch of a
    bulk action by keyset. On PostgreSQL the GIN index yields the few
    matching rows, which are then sorted (allowed); elsewhere the rows
    come in index order, unsorted."""
    dialect = {'mysql': 'mariadb'}.get(backend, backend)
    page = orders.list_statement(
        dialect, None, 100, project_id=models.DEFAULT_PROJECT,
        with_meta=False, meta=META_FILTERS)
    batch = bulk_orders.batch_statement(dialect, bulk_orders.Selection(
        statuses=(models.PENDING,), meta=META_FILTERS), None, 200)
    gin = META_INDEX.get(backend)
    # InnoDB's secondary index holds the primary key: ``status = S``
    # comes in id order from ``ix_orders_status``.
    primary = {'sqlite': 'sqlite_autoindex_orders_1',
               'postgresql': 'pk_orders',
               'mysql': 'ix_orders_status'}[backend]
    return {
        'orders by meta, a listing page': (
            page, gin or 'ix_orders_project_id_created_at', bool(gin)),
        'orders by meta, a bulk batch': (batch, gin or primary, bool(gin)),
    }


def explain_meta(database, backend):
    """The plans of the search by metadata on the orders table, as
    ``explain``'s records (``moment`` is ``meta``), with ``sort_allowed``.
    """
    records = []
    with database.engine.connect() as connection:
        for name, (statement, index, sort_allowed) in _meta_statements(
                backend).items():
            lines = _plan_lines(connection, backend, statement)
            uses_index, sorts = _judge(backend, lines, index)
            records.append({'moment': 'meta', 'query': name, 'index': index,
                            'uses_index': uses_index, 'sorts': sorts,
                            'sort_allowed': sort_allowed, 'plan': lines})
    return records
