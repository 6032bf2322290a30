"""Admission (``[order_type:T] max_pending``) and orders that start later
(``not_before``, ``order create --not-before``), on every database.

A refused create writes nothing, not even a callback URL's row; the
count goes down as orders end; concurrent creators never put more orders
PENDING than the bound. An order created to start later stays PENDING,
its first step runs no sooner than its time and within about a scheduler
period after it, cast by a real retry daemon to real workers over
RabbitMQ.
"""

import datetime
import re
import threading

import pytest
import sqlalchemy as sa

from tests import config
from tests.functional import processes
from tests.functional import workflows
from tests import singular
from worker import api
from worker.db import models

BOUND = 10
THREADS = 8
ATTEMPTS = 3
CALLBACK = 'https://hooks.example.org/%s'


def _conf(bound):
    return config.make_conf(**{
        'order_type:certificate.max_pending': bound,
        'notifications.allowed_hosts': ['hooks.example.org'],
        'notifications.secret': 's'})


def _all_rows(database):
    """``{table: rows}`` of every table."""
    with database.session() as session:
        return {table.name: session.execute(
            sa.select(sa.func.count()).select_from(table)).scalar()
            for table in models.Base.metadata.sorted_tables}


def _pending(database, order_type='certificate'):
    with database.reader() as session:
        return database.repositories.orders.count_pending(session,
                                                          order_type)


def test_max_pending_refuses_past_the_bound_writes_nothing_and_recovers(
        database):
    orders = api.OrderAPI(database, _conf(2))
    first = orders.create('certificate', {}, project_id='p',
                          callback_urls=[CALLBACK % 'a'])
    second = orders.create('certificate', {}, project_id='p')
    before = _all_rows(database)

    with pytest.raises(api.TooManyPendingOrders) as refused:
        # A URL never seen: not even its row is written.
        orders.create('certificate', {}, project_id='p',
                      callback_urls=[CALLBACK % 'new'])
    with pytest.raises(api.TooManyPendingOrders):
        orders.create_many('certificate', {}, 3, project_id='p')

    assert (refused.value.order_type, refused.value.max_pending,
            refused.value.pending) == ('certificate', 2, 2)
    assert _all_rows(database) == before
    # Other types have no bound.
    orders.create('fanout', {}, project_id='p')
    # Cancelled and ended orders are not PENDING: room again.
    orders.cancel(first.id, project_id='p')
    orders.create('certificate', {}, project_id='p',
                  callback_urls=[CALLBACK % 'new'])
    with pytest.raises(api.TooManyPendingOrders):
        orders.create('certificate', {}, project_id='p')
    with database.session() as session, session.begin():
        singular.complete(database.repositories.orders, session, second.id,
                          orders.now(), {})
    orders.create('certificate', {}, project_id='p')
    assert _pending(database) == 2


def test_concurrent_creators_never_overshoot_the_bound(database):
    orders = api.OrderAPI(database, _conf(BOUND))
    orders.now()
    start = threading.Barrier(THREADS)
    created, refused, errors = [], [], []

    def creator():
        start.wait()
        for _ in range(ATTEMPTS):
            try:
                created.append(orders.create('certificate', {},
                                             project_id='p').id)
            except api.TooManyPendingOrders as exc:
                refused.append(exc.pending)
            except Exception as exc:
                errors.append(exc)

    threads = [threading.Thread(target=creator) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)

    assert errors == []
    assert len(created) == BOUND == _pending(database)
    assert len(refused) == THREADS * ATTEMPTS - BOUND
    # Each refusal saw the bound reached, never more.
    assert set(refused) == {BOUND}


def _db_now(database):
    """The database's clock, as the daemons measure it."""
    return api.OrderAPI(database, config.make_conf()).now()


def _create_later(cluster, start, count=1):
    """``order create --not-before`` ``start`` (naive UTC); the orders as
    the command printed them."""
    text = start.replace(tzinfo=datetime.timezone.utc).isoformat()
    return cluster.manage_json('order', 'create', '--type', 'certificate',
                               '--count', str(count), '--not-before', text)


def _shown(moment, timespec='milliseconds'):
    return moment.isoformat(sep=' ', timespec=timespec)


def test_order_create_not_before_starts_the_order_at_its_time(
        deployment, database):
    period = 1
    cluster = deployment(workflows.options(
        {'worker': {'workers': 2}},
        {'scheduler': {'schedule_period_seconds': period}},
        {'order_type:certificate': {'max_pending': 2}}))
    workflows.start(cluster, count=2)
    # Two orders an hour ahead fill the bound, however slow the commands.
    far = _db_now(database) + datetime.timedelta(hours=1)
    held = _create_later(cluster, far, count=2)
    assert [(order['status'], order['not_before']) for order in held] == [
        ('PENDING', _shown(far))] * 2
    refused = processes.manage(cluster.config, 'order', 'create', '--type',
                               'certificate', check=False, env=cluster.env)
    assert refused.returncode != 0
    assert 'allows at most 2 PENDING orders' in refused.stderr
    shown = cluster.manage_json('order', 'show', held[0]['id'])
    assert shown['not_before'] == _shown(far)
    assert shown['steps'][0]['status'] == 'RETRYING'
    assert shown['steps'][0]['next_retry_at'] == _shown(far)
    before = _db_now(database)
    explained = cluster.manage_json('order', 'explain', held[0]['id'])
    after = _db_now(database)
    starts = re.match(r'created to start later: it starts at (.*) '
                      r'\(not_before\), in (\d+):(\d\d):(\d\d);',
                      explained['why'])
    assert starts and starts[1] == _shown(far, 'seconds'), explained
    # The time left by the database's clock as the command read it,
    # however long the commands took since ``far`` was read; within a
    # second (rounding, each process's measure of the clock).
    hours, minutes, seconds = map(int, starts.groups()[1:])
    left = (hours * 60 + minutes) * 60 + seconds
    assert (far - after).total_seconds() - 1 <= left <= \
        (far - before).total_seconds() + 1, (left, far, before, after)
    processes.manage(cluster.config, 'order', 'cancel', held[0]['id'],
                     env=cluster.env)

    # Its place taken by one that starts in a few seconds: created here,
    # where no process start can delay it past its time (nothing is cast
    # at its creation: the retry daemon casts its first step).
    orders = api.OrderAPI(database, _conf(2))
    start = orders.now() + datetime.timedelta(seconds=4)
    soon = orders.create('certificate', {}, project_id='p',
                         not_before=start)
    assert (soon.status, soon.not_before) == (api.PENDING, start)
    workflows.wait_status(database, [soon.id], models.ACTIVE, timeout=60)
    first = workflows.step_rows(database, soon.id)['process_type_order']
    # Both times from the database's clock.
    assert start <= first.started_at, (start, first.started_at)
    # Due at ``start``: the next pass casts it (a period, its jitter, and
    # the cast and claim).
    late = (first.started_at - start).total_seconds()
    assert late < period * 1.2 + 2, late
    # It ended: a create is accepted again.
    cluster.manage_json('order', 'create', '--type', 'certificate')


@pytest.mark.parametrize('value, words', [
    ('tomorrow', 'argument --not-before: must be an ISO 8601 time'),
    ('2026-12-01T09:00:00', 'argument --not-before: must say its time '
                            'zone'),
    ('2999-12-01T09:00:00Z', 'not_before must be at most 3653 days ahead')])
def test_order_create_refuses_a_bad_not_before(deployment, database, value,
                                               words):
    cluster = deployment({})
    refused = processes.manage(cluster.config, 'order', 'create', '--type',
                               'certificate', '--not-before', value,
                               check=False, env=cluster.env)
    assert refused.returncode != 0
    assert words in refused.stderr
    assert _all_rows(database)['orders'] == 0
