"""Search by metadata and bulk actions by filter, on every database.

The meta filters' typed equality through ``worker.api`` on each database
(PostgreSQL's jsonb containment, MariaDB's ``JSON_CONTAINS``, SQLite's
JSON functions agree), and ``order bulk cancel`` / ``reprioritize`` by
``barbican-retry-manage`` while real barbican-worker and barbican-retry
processes run the other orders over RabbitMQ.
"""

import datetime

import sqlalchemy as sa

from tests import config
from tests.functional import processes
from tests.functional import workflows
from worker import api
from worker.db import meta_search
from worker.db import models

META_CASES = [
    {'n': 3, 'issuer': {'name': 'x'}},
    {'n': '3', 'issuer': {'name': 'y'}},
    {'n': 3.0, 'ca': 'acme', 'key-id': 'k'},
    {'n': [3], 'ca': None, 'flag': True},
    {'n': {'m': 3}, 'flag': False},
]


def _api(database):
    return api.OrderAPI(database, config.make_conf())


def test_meta_filters_are_typed_equality_on_every_database(database):
    orders = _api(database)
    made = [orders.create('certificate', meta, project_id='p1')
            for meta in META_CASES]
    other = orders.create('certificate', META_CASES[0], project_id='p2')

    def found(project='p1', **meta):
        return [made.index(order) if order in made else 'other'
                for order in _by_id(made + [other], orders.list(
                    project_id=project, meta=meta, with_meta=False))]

    assert found(n=3) == [0, 2]
    assert found(n='3') == [1]
    assert found(**{'issuer.name': 'x'}) == [0]
    assert found(**{'n.m': 3}) == [4]
    assert found(ca=None) == [3]
    assert found(flag=True) == [3]
    assert found(flag=False) == [4]
    assert found(ca='acme', n=3) == [2]
    assert found(**{'key-id': 'k'}) == [2]
    assert found(missing='x') == []
    # A project never matches another's orders.
    assert found(project='p2', n=3) == ['other']
    assert found(project='p2', n='3') == []


def _by_id(made, listed):
    """The created orders of ``listed``, in ``made``'s objects."""
    ids = {order.id: order for order in made}
    return [ids[order.id] for order in listed]


def _status_counts(database, ids):
    with database.session() as session:
        return dict(session.execute(
            sa.select(models.Order.status, sa.func.count())
            .where(models.Order.id.in_(ids))
            .group_by(models.Order.status)).all())


def _retry_priorities(database, ids):
    with database.session() as session:
        return set(session.scalars(
            sa.select(models.OrderRetryTask.priority)
            .where(models.OrderRetryTask.order_id.in_(ids))))


OPTIONS = {
    'scheduler': {'schedule_period_seconds': 1, 'schedule_jitter': 0.2},
    'worker': {'workers': 2},
    'simple_certificate': {'delay_before_update_seconds': 1},
    'api_limits': {'bulk_batch_size': 7},
}


def test_bulk_cancel_while_the_workers_run_the_other_orders(
        deployment, database):
    cluster = deployment(OPTIONS)
    _, retry = workflows.start(cluster, count=2)
    later = (datetime.datetime.now(datetime.timezone.utc) +
             datetime.timedelta(hours=1)).strftime('%Y-%m-%dT%H:%M:%SZ')
    # Held in the retry table until later: PENDING while the bulk runs.
    held = _create(cluster, 30, '{"ca": "acme"}', '--not-before', later)
    kept = _create(cluster, 5, '{"ca": "other"}', '--not-before', later)
    running = _create(cluster, 40, '{"ca": "live"}')

    def bulk(*argv):
        return processes.manage(cluster.config, 'order', 'bulk', *argv,
                                env=cluster.env).stdout

    assert bulk('reprioritize', '--meta', 'ca=other', '--priority',
                '9') == '5 order(s) matched; 5 changed (reprioritize)\n'
    assert _retry_priorities(database, kept) == {9}
    assert bulk('cancel', '--meta', 'ca=acme', '--dry-run') == (
        '30 order(s) matched; cancel would change 30 (dry run, nothing '
        'changed)\n')
    # A missing key is not null.
    assert bulk('cancel', '--meta', 'ca=acme', '--meta', 'run=null') == (
        '0 order(s) matched; 0 changed (cancel)\n')
    # Batches of 7: five transactions, the workers running between them.
    assert bulk('cancel', '--meta', 'ca=acme') == (
        '30 order(s) matched; 30 changed (cancel)\n')
    assert _status_counts(database, held) == {models.CANCELLED: 30}
    assert _retry_priorities(database, held) == set()
    assert _status_counts(database, kept) == {models.PENDING: 5}
    processes.wait_for(
        lambda: _status_counts(database, running) == {models.ACTIVE: 40},
        90, 'the other orders to end ACTIVE')
    assert retry.stop() == 0


def _create(cluster, count, meta, *argv):
    """``order create`` of ``count`` certificate orders; their ids."""
    return [order['id'] for order in cluster.manage_json(
        'order', 'create', '--type', 'certificate', '--count', str(count),
        '--meta', meta, *argv)]


def test_the_meta_search_of_postgresql_reads_its_gin_index(
        database, backend):
    orders = _api(database)
    for number in range(200):
        orders.create('certificate', {'ca': 'ca%d' % number},
                      project_id='p1')
    with database.engine.connect() as connection:
        indexes = {index['name'] for index in sa.inspect(
            connection).get_indexes('orders')}
        if backend != 'postgresql':
            assert 'ix_orders_meta_path_ops' not in indexes
            return
        assert 'ix_orders_meta_path_ops' in indexes
        connection.exec_driver_sql('ANALYZE orders')
        connection.exec_driver_sql('SET enable_seqscan = off')
        statement = sa.select(models.Order.id).where(meta_search.clause(
            'postgresql', models.Order.meta,
            [meta_search.MetaFilter(('ca',), 'ca7')]))
        sql = str(statement.compile(dialect=connection.dialect,
                                    compile_kwargs={'literal_binds': True}))
        plan = '\n'.join(row[0] for row in connection.exec_driver_sql(
            'EXPLAIN ' + sql))
    assert 'ix_orders_meta_path_ops' in plan, plan
