"""Per-project quotas (``[quota] pending_orders_per_project`` and the
admin's override, ``QuotaAPI``), on every database.

A refused create writes nothing; a project's refusal leaves other
projects alone; the override wins over the default and dropping it
restores the default; concurrent creators of one project never put more
of its orders PENDING than its quota, whichever type they create.
"""

import threading

import pytest
import sqlalchemy as sa

from tests import config
from worker import api
from worker.db import models

QUOTA = 6
THREADS = 8
ATTEMPTS = 3


def _apis(database, default=-1, **options):
    conf = config.make_conf(**{'quota.pending_orders_per_project': default,
                               **options})
    orders = api.OrderAPI(database, conf)
    return orders, api.QuotaAPI(database, conf, orders.now)


def _pending(database, project_id):
    with database.reader() as session:
        return database.repositories.quotas.count_pending(session,
                                                          project_id)


def _orders(database):
    with database.reader() as session:
        return session.execute(
            sa.select(sa.func.count()).select_from(models.Order)).scalar()


def test_the_default_bounds_each_project_alone_and_writes_nothing_past_it(
        database):
    orders, quotas = _apis(database, default=2)
    first = orders.create('certificate', {}, project_id='a')
    orders.create('fanout', {}, project_id='a')
    before = _orders(database)

    with pytest.raises(api.ProjectQuotaExceeded) as refused:
        orders.create('certificate', {}, project_id='a')
    with pytest.raises(api.TooManyPendingOrders):
        orders.create_many('fanout', {}, 2, project_id='a')

    assert (refused.value.project_id, refused.value.max_pending,
            refused.value.pending) == ('a', 2, 2)
    assert _orders(database) == before
    # Another project has room of its own.
    orders.create_many('certificate', {}, 2, project_id='b')
    # An order that is no longer PENDING makes room.
    orders.cancel(first.id, project_id='a')
    orders.create('certificate', {}, project_id='a')
    assert _pending(database, 'a') == 2
    assert quotas.get('a') == api.ProjectQuota('a', 2, None, 2)


def test_the_override_wins_and_its_removal_restores_the_default(database):
    orders, quotas = _apis(database, default=1)
    assert quotas.set('big', 3) == api.ProjectQuota('big', 3, 3, 1)
    assert quotas.set('none', -1).pending_orders == -1
    orders.create_many('certificate', {}, 3, project_id='big')
    orders.create_many('certificate', {}, 5, project_id='none')
    with pytest.raises(api.ProjectQuotaExceeded):
        orders.create('certificate', {}, project_id='big')
    assert [quota.project_id for quota in quotas.list()] == ['big', 'none']

    assert quotas.delete('none') == api.ProjectQuota('none', 1, None, 1)
    with pytest.raises(api.ProjectQuotaExceeded):
        orders.create('certificate', {}, project_id='none')
    assert [quota.project_id for quota in quotas.list()] == ['big']
    # A project never seen can be given an override before its first
    # order, and 0 refuses every create.
    quotas.set('closed', 0)
    with pytest.raises(api.ProjectQuotaExceeded):
        orders.create('certificate', {}, project_id='closed')


@pytest.mark.parametrize('value', [-2, 2 ** 31, 1.5, '3', True, None])
def test_an_override_out_of_bounds_is_refused(database, value):
    _, quotas = _apis(database)
    with pytest.raises(api.OutOfBounds):
        quotas.set('p', value)
    assert quotas.list() == []


def test_an_idempotent_retry_over_the_quota_gets_its_order(database):
    orders, _ = _apis(database, default=1)
    first = orders.create('certificate', {}, project_id='p',
                          idempotency_key='k')
    assert orders.create('certificate', {}, project_id='p',
                         idempotency_key='k').id == first.id


def test_concurrent_creators_never_overshoot_the_quota(database):
    orders, _ = _apis(database, default=QUOTA)
    orders.now()
    start = threading.Barrier(THREADS)
    created, refused, errors = [], [], []

    def creator(index):
        start.wait()
        # Two types: the type's admission does not serialize them.
        order_type = ('certificate', 'fanout')[index % 2]
        for _ in range(ATTEMPTS):
            try:
                created.append(orders.create(order_type, {},
                                             project_id='p').id)
            except api.ProjectQuotaExceeded as exc:
                refused.append(exc.pending)
            except Exception as exc:
                errors.append(exc)

    threads = [threading.Thread(target=creator, args=(index,))
               for index in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)

    assert errors == []
    assert len(created) == QUOTA == _pending(database, 'p')
    assert len(refused) == THREADS * ATTEMPTS - QUOTA
    assert set(refused) == {QUOTA}
