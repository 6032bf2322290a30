"""The retry daemons' purge by ``[database] retention_days``: when a
daemon purges, and when it leaves it to another; on the in-memory
database."""

import datetime
import threading

import pytest

from scheduler import purge
from scheduler import retention
from tests import config
from tests import singular
from worker.db import models
from worker import order_types

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)
INTERVAL = 3600


def _at(seconds):
    return NOW + datetime.timedelta(seconds=seconds)


@pytest.fixture
def database(sqlite_database):
    """SQLite, not the fake: the counts by status are an operator's
    query (``worker.db.queries``), SQL only."""
    return sqlite_database


def _finished(database, count, at, status=models.ACTIVE):
    """``count`` orders moved to ``status`` at ``at``; their ids."""
    repositories = database.repositories
    with database.session() as session, session.begin():
        created = [repositories.orders.create(
            session, order_types.get('certificate'), {}, at).id
            for _ in range(count)]
        for order_id in created:
            if status == models.ACTIVE:
                singular.complete(repositories.orders, session, order_id, at,
                                  {})
            elif status == models.ERROR:
                repositories.orders.fail(session, order_id, at, 'failed')
    return created


def _left(database):
    with database.reader() as session, session.begin():
        return database.repositories.orders.count_by_status(session)


def _daemon(database, name='1@a', days=1.0, clock=lambda: NOW, stop=None):
    conf = config.make_conf(**{
        'database.retention_days': days,
        'database.purge_interval_seconds': INTERVAL})
    return retention.Retention(conf, database, name, clock,
                               stop or threading.Event())


def test_no_retention_no_purge(database):
    _finished(database, 2, _at(-10 * 86400))
    assert _daemon(database, days=0).run_once(NOW) is None
    assert _left(database) == {models.ACTIVE: 2}


def test_old_finished_orders_go_and_unfinished_ones_stay(database):
    _finished(database, 2, _at(-2 * 86400))
    _finished(database, 1, _at(-2 * 86400), models.ERROR)
    _finished(database, 1, _at(-2 * 86400), models.PENDING)
    _finished(database, 1, _at(-3600))
    counts = _daemon(database).run_once(NOW)
    assert (counts.orders, counts.order_steps) == (3, 6)
    assert _left(database) == {models.ACTIVE: 1, models.PENDING: 1}


def test_one_purge_per_interval_whichever_daemon(database):
    first, second = _daemon(database, '1@a'), _daemon(database, '2@b')
    assert first.run_once(NOW).orders == 0
    _finished(database, 1, _at(-2 * 86400))
    # The interval counts from the end of the last purge, by either.
    assert second.run_once(_at(INTERVAL - 1)) is None
    assert first.run_once(_at(INTERVAL - 1)) is None
    assert second.run_once(_at(INTERVAL + 1)).orders == 1
    with database.reader() as session, session.begin():
        lock = database.repositories.locks.get(session,
                                               models.ORDER_PURGE_LOCK)
    assert (lock.worker_host_name, lock.created_at) == ('2@b', NOW)


def test_a_purge_taken_over_stops_at_its_next_batch(database):
    _finished(database, 3, _at(-2 * 86400))
    slow = _daemon(database, '1@a')
    owner_token = slow._take(NOW)
    # Its daemon stalled for an interval: another takes the row over.
    with database.session() as session, session.begin():
        assert database.repositories.locks.take_over(
            session, retention.LOCK, '2@b', 'other', _at(INTERVAL + 1),
            _at(1))
    counts = purge.purge(database, models.PURGEABLE_STATUSES,
                         _at(-86400), batch_size=1,
                         go_on=slow._go_on(owner_token))
    assert counts.orders == 0
    assert _left(database) == {models.ACTIVE: 3}


def test_a_stopping_daemon_purges_no_further_batch(database):
    _finished(database, 3, _at(-2 * 86400))
    stop = threading.Event()
    stop.set()
    assert _daemon(database, stop=stop).run_once(NOW).orders == 0
    assert _left(database) == {models.ACTIVE: 3}


def test_the_looks_are_a_quarter_interval_apart_at_most_a_minute(database):
    assert _daemon(database).next_check() == retention.MAX_CHECK_SECONDS
    conf = config.make_conf(**{'database.purge_interval_seconds': 20})
    assert retention.Retention(conf, database, 'x', None,
                               None).next_check() == 5
