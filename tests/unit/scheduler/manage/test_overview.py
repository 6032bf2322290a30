"""``barbican-retry-manage status``: what the overview reads, and the
screen and the JSON it prints; on the in-memory store."""

import datetime

from scheduler.manage import explain
from scheduler.manage import overview
from scheduler.manage import status
from tests import config
from tests import singular
from worker.db import models
from worker import order_types

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)


def _at(seconds):
    return NOW + datetime.timedelta(seconds=seconds)


def _deployment(database):
    """A daemon holding the lock, a live and a dead worker, three orders
    (the oldest PENDING one with a due retry), a later and a parked row."""
    repos = database.repositories
    workflow = order_types.get('certificate')
    with database.session() as session, session.begin():
        repos.services.heartbeat(session, '1@r', models.SCHEDULER, 'r', 1,
                                 _at(-2))
        repos.services.record_pass(session, '1@r', _at(-5), _at(10))
        repos.services.heartbeat(session, '2@w', models.WORKER, 'w', 2,
                                 _at(-1), clock_offset=120.25)
        repos.services.heartbeat(session, '3@w', models.WORKER, 'w', 3,
                                 _at(-600))
        repos.locks.insert(session, models.ORDER_RETRY_TASK_LOCK, '1@r',
                           'token', _at(-1))
        oldest = repos.orders.create(session, workflow, {}, _at(-3600))
        newer = repos.orders.create(session, workflow, {}, _at(-60))
        done = repos.orders.create(session, workflow, {}, _at(-7200))
        singular.complete(repos.orders, session, done.id, _at(-7000), {})
        singular.add_retry(repos.retry_tasks, session, oldest.id, 'x', _at(-1))
        singular.add_retry(repos.retry_tasks, session, newer.id, 'x', _at(30))
        parked = singular.add_retry(repos.retry_tasks, session, newer.id, 'y',
                                    _at(-9))
    with database.session() as session, session.begin():
        [row] = [row for row in repos.retry_tasks.due(session, NOW, 10)
                 if row.id == parked]
        repos.retry_tasks.park(session, row, 'no such step')
    return database, oldest.id


def test_the_overview_reads_processes_lock_rows_orders_and_the_oldest(
        sqlite_database):
    database, oldest = _deployment(sqlite_database)
    conf = config.make_conf(service_down_time=60)
    seen = overview.take(database, conf, NOW)

    assert [(p.name, p.alive) for p in seen.processes] == [
        ('1@r', True), ('2@w', True), ('3@w', False)]
    assert [p.name for p in seen.alive(models.WORKER)] == ['2@w']
    assert (seen.processes[0].last_pass_at,
            seen.processes[0].next_pass_at) == (_at(-5), _at(10))
    assert (seen.lock.holder, seen.lock.stale) == ('1@r', False)
    assert seen.retry_rows == overview.RetryRows(due_now=1, later=1,
                                                 parked=1)
    assert seen.orders == {models.PENDING: 2, models.ACTIVE: 1,
                           models.ERROR: 0, models.CANCELLING: 0,
                           models.CANCELLED: 0}
    assert (seen.oldest_pending.id, seen.oldest_pending.age_seconds) == (
        oldest, 3600)
    assert seen.oldest_pending.explanation == explain.explain_order(
        database, conf, oldest, NOW).sentence


def test_the_screen_and_the_json_show_the_same_state(sqlite_database):
    database, oldest = _deployment(sqlite_database)
    seen = overview.take(database, config.make_conf(service_down_time=60),
                         NOW)
    text = '\n'.join(status.render_text(seen))

    assert 'Retry daemons: 1 alive' in text
    assert 'Workers: 1 alive' in text
    assert '| 2@w  | yes   | 1.0s ago    | 1.0s ago    | +120.2s      |' \
        in text
    assert '| 1@r  | yes   | 2.0s ago  | 5.0s ago  | in 10.0s  |' in text
    assert '| 3@w  | NO    | 10m 00s ago | 10m 00s ago |' in text
    assert 'Lock: held by 1@r since 2026-11-22 11:59:59.000 (1.0s ago)' \
        in text
    assert 'Retry rows: 1 due now, 1 later, 1 parked' in text
    assert ('Orders: PENDING 2, ACTIVE 1, ERROR 0, CANCELLING 0, '
            'CANCELLED 0') in text
    assert 'Oldest PENDING order: %s (certificate, created 1h 00m ago)' \
        % oldest in text

    data = status.as_json(seen)
    assert (data['retry_daemons_alive'], data['workers_alive']) == (1, 1)
    assert data['processes'][2]['heartbeat_age_seconds'] == 600
    assert [p['clock_offset_seconds'] for p in data['processes']] == [
        None, 120.25, None]
    assert data['lock'] == {'held': True, 'holder': '1@r',
                            'taken_at': '2026-11-22 11:59:59.000',
                            'stale': False, 'stale_reason': None}
    assert data['retry_rows'] == {'due_now': 1, 'later': 1, 'parked': 1}
    assert data['orders']['PENDING'] == 2
    assert data['oldest_pending']['id'] == oldest
    assert data['oldest_pending']['explanation'] == \
        seen.oldest_pending.explanation


def test_a_stale_lock_and_no_pending_order_read_as_such(sqlite_database):
    database = sqlite_database
    with database.session() as session, session.begin():
        database.repositories.locks.insert(
            session, models.ORDER_RETRY_TASK_LOCK, '9@gone', 'token',
            _at(-3600))
    seen = overview.take(database, config.make_conf(), NOW)
    text = '\n'.join(status.render_text(seen))

    assert 'stale: taken at' in text and 'the next pass clears it' in text
    assert 'Oldest PENDING order: none' in text
    assert 'Retry daemons: 0 alive' in text
    assert status.as_json(seen)['oldest_pending'] is None
