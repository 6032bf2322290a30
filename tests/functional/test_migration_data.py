"""Orders of the release before order types, migrated with data in them.

A database at revision 0002 holds orders in every state that release's
model had: the order itself carried its step, token, owner and dispatch
time. Upgraded to head, each becomes rows of ``order_steps`` as
``alembic/versions/0003_order_steps.py`` documents, its retry rows still
match their step and token, and a real worker and retry daemon finish
every PENDING order.

A database at revision 0003 keeps every retry row, with its id, through
0004, after which no id is ever given again, on SQLite too.
"""

import datetime
import json
import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy import orm as sa_orm

from tests.functional import processes
from tests.functional import workflows
from tests import plugin as test_plugin
from tests import singular
from worker.db import migration
from worker.db import models
from worker.db import orders
from worker.db import retry_tasks
from worker.db import session as db_session
from worker.db import steps

REQUEST = 'process_type_order'
CHECK = 'check_certificate_status'
GONE = '4242@a-host-long-gone'

# The tables as revision 0002 left them.
_OLD_ORDERS = sa.table(
    'orders', sa.column('id'), sa.column('type'), sa.column('status'),
    sa.column('meta', sa.JSON), sa.column('error_reason'),
    sa.column('generation'), sa.column('step'), sa.column('attempt'),
    sa.column('owner'), sa.column('claimed_at', models.Timestamp),
    sa.column('dispatched_at', models.Timestamp),
    sa.column('created_at', models.Timestamp),
    sa.column('updated_at', models.Timestamp))
_OLD_RETRIES = sa.table(
    'order_retry_tasks', sa.column('order_id'), sa.column('retry_task'),
    sa.column('retry_at', models.Timestamp), sa.column('retry_args'),
    sa.column('retry_kwargs'), sa.column('retry_count'),
    sa.column('parked', sa.Boolean), sa.column('park_reason'),
    sa.column('created_at', models.Timestamp))


def _old_order(order_id, status, step, generation, now, **values):
    row = dict(id=order_id, type='certificate', status=status, meta={},
               error_reason=None, generation=generation, step=step,
               attempt=0, owner=None, claimed_at=None, dispatched_at=None,
               created_at=now - datetime.timedelta(minutes=10),
               updated_at=now - datetime.timedelta(minutes=1))
    row.update(values)
    return row


def _old_retry(order_id, step, generation, retry_count, now):
    return dict(order_id=order_id, retry_task=step, retry_at=now,
                retry_args=json.dumps([order_id]),
                retry_kwargs=json.dumps({'generation': generation}),
                retry_count=retry_count, parked=False, park_reason=None,
                created_at=now)


@pytest.fixture
def old_data(database_url):
    """A database at 0002 with one order in each state; returns
    ``(rows by name, retry rows)``."""
    engine = sa.create_engine(database_url, poolclass=sa.pool.NullPool)
    migration.upgrade(engine, '0002')
    now = datetime.datetime.utcnow().replace(microsecond=123456)
    before = now - datetime.timedelta(seconds=60)
    rows = {
        # Cast a minute ago, never taken up: a lost dispatch.
        'dispatched': _old_order('00000000-0000-0000-0000-000000000001',
                                 models.PENDING, REQUEST, 0, now,
                                 dispatched_at=before),
        # Running on a process that is gone; the type had another name.
        'claimed': _old_order('00000000-0000-0000-0000-000000000002',
                              models.PENDING, REQUEST, 1, now,
                              type='order', owner=GONE, claimed_at=before),
        # The CA was unavailable once for the status check: a retry row.
        'checking': _old_order('00000000-0000-0000-0000-000000000003',
                               models.PENDING, CHECK, 2, now, attempt=1,
                               meta={'unavailable_attempts': 1}),
        # The same, for the request itself.
        'requesting': _old_order('00000000-0000-0000-0000-000000000004',
                                 models.PENDING, REQUEST, 1, now, attempt=1,
                                 meta={'unavailable_attempts': 1}),
        'active': _old_order('00000000-0000-0000-0000-000000000005',
                             models.ACTIVE, CHECK, 4, now,
                             meta={'certificate': 'simple-5'}),
        'error': _old_order('00000000-0000-0000-0000-000000000006',
                            models.ERROR, REQUEST, 3, now,
                            error_reason='process_type_order: remote '
                                         'service unavailable'),
    }
    retries = [_old_retry(rows['checking']['id'], CHECK, 2, 1, now),
               _old_retry(rows['requesting']['id'], REQUEST, 1, 1, now)]
    with engine.begin() as connection:
        connection.execute(sa.insert(_OLD_ORDERS), list(rows.values()))
        connection.execute(sa.insert(_OLD_RETRIES), retries)
    engine.dispose()
    return rows, retries


def _step(name, status, **values):
    row = dict(name=name, status=status, generation=0, attempt=0,
               failures=0, polls=0, owner=None, claimed_at=None,
               lease_expires_at=None, dispatched_at=None, started_at=None,
               finished_at=None, last_error=None, output=None)
    row.update(values)
    return row


def _expected_steps(old):
    """The rows 0003_order_steps.py documents for each old order."""
    done = dict(finished_at=old['active']['updated_at'])
    return {
        'dispatched': [
            _step(REQUEST, models.STEP_PENDING,
                  dispatched_at=old['dispatched']['dispatched_at']),
            _step(CHECK, models.STEP_WAITING)],
        'claimed': [
            _step(REQUEST, models.STEP_PENDING, generation=1, attempt=1,
                  owner=GONE, claimed_at=old['claimed']['claimed_at'],
                  lease_expires_at=old['claimed']['claimed_at'] +
                  datetime.timedelta(seconds=600),
                  started_at=old['claimed']['claimed_at']),
            _step(CHECK, models.STEP_WAITING)],
        'checking': [
            _step(REQUEST, models.STEP_DONE, **done),
            _step(CHECK, models.STEP_PENDING, generation=2, attempt=1,
                  failures=1)],
        'requesting': [
            _step(REQUEST, models.STEP_PENDING, generation=1, attempt=1,
                  failures=1),
            _step(CHECK, models.STEP_WAITING)],
        'active': [_step(REQUEST, models.STEP_DONE, **done),
                   _step(CHECK, models.STEP_DONE, **done)],
        'error': [],
    }


def _columns(step):
    return {name: getattr(step, name) for name in (
        'name', 'status', 'generation', 'attempt', 'failures', 'polls',
        'owner', 'claimed_at', 'lease_expires_at', 'dispatched_at',
        'started_at', 'finished_at', 'last_error', 'output')}


def test_orders_of_0002_are_migrated_and_then_finished(
        old_data, database_url, transport_url, tmp_path):
    old, old_retries = old_data
    database = db_session.Database.from_url(database_url)
    migration.upgrade(database.engine)
    try:
        _check_migrated(database, old, old_retries)
        _check_finished(database, old, database_url, transport_url,
                        tmp_path)
    finally:
        database.dispose()


def _check_migrated(database, old, old_retries):
    expected = _expected_steps(old)
    with database.session() as session:
        for name, row in old.items():
            order = orders.get(session, row['id'])
            assert (order.type, order.status, order.meta,
                    order.error_reason) == (
                'certificate', row['status'], row['meta'],
                row['error_reason']), name
            found = steps.for_order(session, row['id'])
            assert [_columns(found[step['name']])
                    for step in expected[name]] == expected[name], name
            assert len(found) == len(expected[name]), name
        tasks = retry_tasks.list_tasks(session)
        assert sorted((task.order_id, task.retry_task, task.retry_count)
                      for task in tasks) == sorted(
            (task['order_id'], task['retry_task'], task['retry_count'])
            for task in old_retries)
        for task in tasks:
            # The row still names a PENDING step at the token it carries:
            # cast as it is, it finds its step.
            step = steps.for_order(session, task.order_id)[task.retry_task]
            assert step.status == models.STEP_PENDING
            assert json.loads(task.retry_kwargs) == {
                'generation': step.generation}
            assert json.loads(task.retry_args) == [task.order_id]
            assert step.failures == task.retry_count
            assert not task.parked


def _check_finished(database, old, database_url, transport_url, tmp_path):
    # The certificate plugin that records its calls with their tokens.
    cluster = processes.Deployment(tmp_path, database_url, transport_url,
                                   workflows.FAST)
    try:
        workers = cluster.start('barbican-worker', 'worker')
        retry = cluster.start('barbican-retry', 'retry')
        workers.wait_for_log('serving topic')
        retry.wait_for_log('Retry scheduler started')
        processes.wait_for(
            lambda: _counts(database) == {models.ACTIVE: 5,
                                          models.ERROR: 1},
            40, 'every PENDING order ACTIVE')
        calls = {}
        for call in test_plugin.read_log(cluster.plugin_log):
            calls.setdefault(call['order'], []).append(
                (call['step'], call['token'], call['result']))
        issue = 'issue_certificate_request'
        check = 'check_certificate_status'
        # Each PENDING order resumed at its own step, under a newer token
        # than the one the old release gave it.
        assert calls[old['dispatched']['id']][0][:2] == (issue, 2)
        assert calls[old['claimed']['id']][0][:2] == (issue, 3)
        assert calls[old['checking']['id']] == [(check, 3, 'Completed')]
        assert calls[old['requesting']['id']][0] == (issue, 2, 'RetryLater')
        assert old['active']['id'] not in calls
        assert old['error']['id'] not in calls
        assert 'its owner %s stopped heartbeating' % GONE in retry.log()
        assert 'no worker took up its dispatch' in retry.log()
        assert workers.process.poll() is None
        with database.session() as session:
            assert retry_tasks.list_tasks(session) == []
            assert orders.get(session, old['active']['id']).meta == \
                old['active']['meta']
    finally:
        cluster.kill_all()


def _counts(database):
    with database.session() as session:
        return orders.count_by_status(session)


# Revision 0004: priorities; retry ids never reused, SQLite included.

_ORDERS_0003 = sa.table(
    'orders', sa.column('id'), sa.column('type'), sa.column('status'),
    sa.column('meta', sa.JSON), sa.column('error_reason'),
    sa.column('created_at', models.Timestamp),
    sa.column('updated_at', models.Timestamp))
_RETRIES_0003 = sa.table(
    'order_retry_tasks', sa.column('id'),
    *(sa.column(column.name, column.type) for column in _OLD_RETRIES.c))


def _retry_rows(connection):
    return [tuple(row) for row in connection.execute(
        sa.select(_RETRIES_0003).order_by(_RETRIES_0003.c.id))]


@pytest.fixture
def rows_at_0003(database_url, backend):
    """A database at 0003 with two orders and retry rows whose highest id
    was deleted; returns the rows as they are before 0004."""
    engine = sa.create_engine(database_url, poolclass=sa.pool.NullPool)
    migration.upgrade(engine, '0003')
    now = datetime.datetime.utcnow().replace(microsecond=654321)
    order_ids = ['00000000-0000-0000-0004-00000000000%d' % i for i in (1, 2)]
    with engine.begin() as connection:
        connection.execute(sa.insert(_ORDERS_0003), [
            dict(id=order_id, type='certificate', status=models.PENDING,
                 meta={}, error_reason=None, created_at=now, updated_at=now)
            for order_id in order_ids])
        connection.execute(sa.insert(_OLD_RETRIES), [
            dict(_old_retry(order_id, CHECK, 1, count, now +
                            datetime.timedelta(seconds=count)),
                 parked=count == 2, park_reason='bad' if count == 2 else None)
            for count in range(3) for order_id in order_ids])
        highest = _retry_rows(connection)[-1][0]
        connection.execute(sa.delete(_RETRIES_0003).where(
            _RETRIES_0003.c.id == highest))
        connection.execute(sa.insert(_OLD_RETRIES).values(
            _old_retry(order_ids[0], REQUEST, 1, 0, now)))
        rows = _retry_rows(connection)
    engine.dispose()
    # Before 0004 SQLite gives the deleted highest id to the next row.
    assert (rows[-1][0] == highest) is (backend == 'sqlite')
    return order_ids, rows


def test_0004_keeps_every_retry_row_and_id_and_ids_are_never_reused(
        rows_at_0003, database_url, backend):
    order_ids, before = rows_at_0003
    database = db_session.Database.from_url(database_url)
    try:
        migration.upgrade(database.engine)
        with database.engine.connect() as connection:
            assert _retry_rows(connection) == before
        _check_0004_schema(database.engine, backend)
        with database.session() as session, session.begin():
            assert {order_id: origin.priority for order_id, origin in
                    orders.retry_origins(session, order_ids).items()} == {
                order_id: 0 for order_id in order_ids}
            assert {task.priority for task in
                    retry_tasks.list_tasks(session)} == {0}
            highest = before[-1][0]
            session.execute(sa.delete(models.OrderRetryTask).where(
                models.OrderRetryTask.id == highest))
            new = singular.add_retry(retry_tasks, session, order_ids[0], CHECK,
                                     before[0][3], priority=9)
        assert new > highest
        with database.session() as session, session.begin():
            assert retry_tasks.get(session, new).priority == 9
            # The foreign key still cascades.
            session.execute(sa.delete(models.Order).where(
                models.Order.id == order_ids[0]))
        with database.session() as session:
            assert {task.order_id for task in
                    retry_tasks.list_tasks(session)} == {order_ids[1]}
    finally:
        database.dispose()


def _check_0004_schema(engine, backend):
    inspector = sa.inspect(engine)
    assert {index['name']: index['column_names'] for index in
            inspector.get_indexes('order_retry_tasks')} == {
        'ix_order_retry_tasks_order_id': ['order_id'],
        'ix_order_retry_tasks_due': ['parked', 'retry_at', 'id'],
        'ix_order_retry_tasks_priority_due': ['parked', 'priority',
                                              'retry_at', 'id'],
        # 0009's, upgraded to head.
        'ix_order_retry_tasks_waiting_for': ['waiting_for', 'id']}
    [foreign_key] = inspector.get_foreign_keys('order_retry_tasks')
    assert (foreign_key['referred_table'], foreign_key['options']) == (
        'orders', {'ondelete': 'CASCADE'})
    if backend == 'sqlite':
        with engine.connect() as connection:
            assert 'AUTOINCREMENT' in connection.exec_driver_sql(
                "SELECT sql FROM sqlite_master "
                "WHERE name = 'order_retry_tasks'").scalar()


# The tables as revision 0010 left them (what 0011 reads).
_URLS_0010 = sa.table(
    'notification_urls', sa.column('id'), sa.column('url'),
    sa.column('url_hash'), sa.column('available', sa.Boolean),
    sa.column('failures'), sa.column('secret'),
    sa.column('created_at', models.Timestamp),
    sa.column('updated_at', models.Timestamp))


def _url_0010(url_id, secret, now, url=None):
    url = url or 'https://hooks.example.org/%d' % url_id
    return dict(id=url_id, url=url, url_hash=models.url_hash(url),
                available=True, failures=0, secret=secret, created_at=now,
                updated_at=now)


# URLs as the release before kept them, as given: {id: (url, after 0011)}.
_SPELLINGS = {
    # The operator's endpoint, with its secret: canonical in place.
    5: ('http://Hooks.Internal:8080', 'http://hooks.internal:8080/'),
    # Row 1's URL spelt another way: left as it is.
    6: ('HTTPS://hooks.example.org:443/1#',) * 2,
    # Refused now (a host the resolver reads as 127.0.0.1): left.
    7: ('http://127.1/hook', 'http://127.1/hook'),
    # Two spellings of one URL no row has: the first takes it.
    8: ('http://B.example.org', 'http://b.example.org/'),
    9: ('http://b.example.org:80', 'http://b.example.org:80'),
}


def test_0011_gives_a_url_with_a_secret_the_project_of_its_orders(
        database_url):
    """A URL with a secret whose orders are all of one project becomes
    that project's; of several projects, or of none, it stays global;
    without a secret, anyone's. Each URL is made canonical in place,
    unless it is refused now or another row has its canonical text."""
    engine = sa.create_engine(database_url, poolclass=sa.pool.NullPool)
    migration.upgrade(engine, '0010')
    now = datetime.datetime.utcnow().replace(microsecond=0)
    with sa_orm.Session(engine) as session, session.begin():
        subscribed = {1: ['tenant-a', 'tenant-a'], 2: ['tenant-a', 'b'],
                      3: [], 4: ['tenant-a'], 5: ['tenant-e']}
        session.execute(sa.insert(_URLS_0010), [
            _url_0010(1, 'whsec_1', now), _url_0010(2, 'whsec_2', now),
            _url_0010(3, 'whsec_3', now), _url_0010(4, None, now)] + [
            _url_0010(url_id, 'whsec_5' if url_id == 5 else None, now, url)
            for url_id, (url, _) in _SPELLINGS.items()])
        for url_id, projects in subscribed.items():
            for project in projects:
                order_id = str(uuid.uuid4())
                # The columns of 0010 (below): the model's are a later
                # revision's.
                session.execute(sa.insert(_ORDERS_0010).values(
                    id=order_id, type='certificate', status=models.PENDING,
                    meta={}, project_id=project, created_at=now,
                    updated_at=now))
                name = models.delivery_name(url_id)
                steps.create(session, order_id, [name], {name}, now)
    migration.upgrade(engine)
    with engine.connect() as connection:
        owners = dict(connection.execute(sa.text(
            'SELECT id, project_id FROM notification_urls')).all())
        urls = {url_id: (url, url_hash) for url_id, url, url_hash in
                connection.execute(sa.text(
                    'SELECT id, url, url_hash FROM notification_urls '
                    'WHERE id >= 5'))}
    engine.dispose()
    assert owners == {1: 'tenant-a', 2: None, 3: None, 4: None,
                      5: 'tenant-e', 6: None, 7: None, 8: None, 9: None}
    assert urls == {url_id: (after, models.url_hash(after))
                    for url_id, (_, after) in _SPELLINGS.items()}


# Revision 0012: project ids and keys compared exactly on MySQL/MariaDB.

_ORDERS_0010 = sa.table(
    'orders', sa.column('id'), sa.column('type'), sa.column('status'),
    sa.column('meta', sa.JSON), sa.column('project_id'),
    sa.column('idempotency_key'), sa.column('created_at', models.Timestamp),
    sa.column('updated_at', models.Timestamp))


def _collations(engine):
    """``{(table, column): collation}`` of the exact columns; None where
    the backend has no such thing (SQLite, PostgreSQL's default)."""
    if engine.dialect.name != 'mysql':
        return {}
    with engine.connect() as connection:
        return {(table, column): collation for table, column, collation in
                connection.exec_driver_sql(
                    "SELECT table_name, column_name, collation_name FROM "
                    "information_schema.columns WHERE table_schema = "
                    "DATABASE() AND column_name IN ('project_id', "
                    "'idempotency_key') AND table_name IN ('orders', "
                    "'schedules')")}


def test_0012_keeps_every_order_and_compares_projects_exactly(
        database_url, backend):
    engine = sa.create_engine(database_url, poolclass=sa.pool.NullPool)
    migration.upgrade(engine, '0010')
    now = datetime.datetime.utcnow().replace(microsecond=0)
    rows = [dict(id='00000000-0000-0000-0012-00000000000%d' % index,
                 type='certificate', status=models.PENDING, meta={},
                 project_id=project, idempotency_key=key, created_at=now,
                 updated_at=now)
            for index, (project, key) in enumerate(
                [('tenB', 'key'), ('tenB', None), ('other', 'key')])]
    with engine.begin() as connection:
        connection.execute(sa.insert(_ORDERS_0010), rows)
    try:
        migration.upgrade(engine)
        with engine.connect() as connection:
            assert [dict(row._mapping) for row in connection.execute(
                sa.select(_ORDERS_0010).order_by(_ORDERS_0010.c.id))] == rows
            # The same key in another case is another order now.
            connection.execute(sa.insert(_ORDERS_0010).values(
                dict(rows[0], id='00000000-0000-0000-0012-000000000009',
                     idempotency_key='KEY')))
        expected = ('utf8mb4_nopad_bin' if backend == 'mysql' else None)
        assert set(_collations(engine).values()) <= {expected}
        assert len(_collations(engine)) == (3 if backend == 'mysql' else 0)
    finally:
        engine.dispose()
