"""What a schedule's tick does while its last order is open (overlap
policies), missed ticks backfilled up to the bound, a paused schedule,
ticks in a time zone across a DST change, and a trigger; on a migrated
SQLite database, the clock a parameter."""

import datetime
import threading

import pytest

from scheduler import overlap
from scheduler import ticks
from tests import config
from worker.api import schedules as schedule_api
from worker import rpcapi

NOW = datetime.datetime(2026, 11, 26, 12, 0, 0)
META = {'unavailable_attempts': 1}


def _at(seconds):
    return NOW + datetime.timedelta(seconds=seconds)


@pytest.fixture
def database(sqlite_database):
    return sqlite_database


@pytest.fixture
def conf():
    return config.make_conf(**{'scheduler.schedule_check_seconds': 30})


def _api(database, conf, client, now=NOW):
    return schedule_api.ScheduleAPI(database, conf, rpcapi.WorkerAPI(client),
                                    now=lambda: now)


def _daemon(database, conf, client, paused=None):
    return ticks.Ticks(conf, database, _api(database, conf, client),
                       threading.Event(), paused=paused)


def _create(database, conf, client, policy, every=10):
    return _api(database, conf, client).create(
        'certificate', META, project_id='p', every=every, overlap=policy)


def _orders(database):
    with database.reader() as session:
        return sorted(database.repositories.orders.list_orders(session),
                      key=lambda order: order.created_at)


def _statuses(database):
    """``(seconds after NOW of the order's tick, status)`` by tick."""
    found = []
    for order in _orders(database):
        tick = datetime.datetime.fromisoformat(
            order.idempotency_key.split(':', 2)[2].rstrip('Z'))
        found.append(('%d' % (tick - NOW).total_seconds(), order.status))
    return sorted(found, key=lambda pair: int(pair[0]))


def _end(database, order_id):
    """The order ends (ERROR: a terminal status)."""
    with database.session() as session, session.begin():
        assert database.repositories.orders.fail(session, order_id, NOW,
                                                 'ended by the test')


def _schedule(database, conf, client, schedule_id):
    return _api(database, conf, client).get(schedule_id, all_projects=True)


@pytest.mark.parametrize('policy, open_, decision', [
    ('allow', True, overlap.Decision.CREATE),
    ('skip', True, overlap.Decision.SKIP),
    ('cancel-previous', True, overlap.Decision.CANCEL_AND_CREATE),
    ('buffer-one', True, overlap.Decision.HOLD),
    ('skip', False, overlap.Decision.CREATE),
    ('buffer-one', False, overlap.Decision.CREATE),
    ('from-a-later-release', True, overlap.Decision.SKIP)])
def test_the_overlap_table(policy, open_, decision):
    assert overlap.decide(policy, open_) is decision


def test_allow_is_the_default_and_creates_beside_an_open_order(
        database, conf, client):
    schedule = _api(database, conf, client).create(
        'certificate', META, project_id='p', every=10)
    assert schedule.overlap == 'allow' and schedule.timezone == 'UTC'
    daemon = _daemon(database, conf, client)
    daemon.run_once(_at(10))
    daemon.run_once(_at(20))
    assert _statuses(database) == [('10', 'PENDING'), ('20', 'PENDING')]


def test_skip_makes_no_order_while_the_last_is_open(database, conf, client):
    schedule = _create(database, conf, client, 'skip')
    daemon = _daemon(database, conf, client)
    daemon.run_once(_at(10))
    result = daemon.run_once(_at(20))
    assert (result.created, result.passed_over) == (0, 1)
    [first] = _orders(database)
    shown = _schedule(database, conf, client, schedule.id)
    assert (shown.last_order_id, shown.next_tick_at) == (first.id, _at(30))
    _end(database, first.id)
    assert daemon.run_once(_at(30)).created == 1
    assert _statuses(database) == [('10', 'ERROR'), ('30', 'PENDING')]


def test_cancel_previous_cancels_the_open_order_then_creates(
        database, conf, client):
    _create(database, conf, client, 'cancel-previous')
    daemon = _daemon(database, conf, client)
    daemon.run_once(_at(10))
    result = daemon.run_once(_at(20))
    assert (result.created, result.cancelled) == (1, 1)
    assert _statuses(database) == [('10', 'CANCELLED'), ('20', 'PENDING')]
    [cancelled] = [order for order in _orders(database)
                   if order.status == 'CANCELLED']
    assert 'overlap cancel-previous' in cancelled.error_reason


def test_cancel_previous_creates_when_the_last_order_has_ended(
        database, conf, client):
    _create(database, conf, client, 'cancel-previous')
    daemon = _daemon(database, conf, client)
    daemon.run_once(_at(10))
    _end(database, _orders(database)[0].id)
    result = daemon.run_once(_at(20))
    assert (result.created, result.cancelled) == (1, 0)
    assert _statuses(database) == [('10', 'ERROR'), ('20', 'PENDING')]


def test_buffer_one_holds_the_latest_tick_and_fires_it_when_the_order_ends(
        database, conf, client):
    schedule = _create(database, conf, client, 'buffer-one')
    daemon = _daemon(database, conf, client)
    daemon.run_once(_at(10))
    held = daemon.run_once(_at(20))
    assert (held.created, held.held) == (0, 1)
    # Held, the daemon looks again soon, not at the next tick only.
    assert held.next_look_in <= ticks.RETRY_SECONDS
    daemon.run_once(_at(30))     # a newer tick replaces the held one
    assert _schedule(database, conf, client,
                     schedule.id).buffered_tick_at == _at(30)
    assert daemon.run_once(_at(31)).created == 0
    [first] = _orders(database)
    _end(database, first.id)
    assert daemon.run_once(_at(32)).created == 1
    assert _statuses(database) == [('10', 'ERROR'), ('30', 'PENDING')]
    shown = _schedule(database, conf, client, schedule.id)
    assert (shown.buffered_tick_at, shown.last_tick_at,
            shown.next_tick_at) == (None, _at(30), _at(40))
    # The held run is now the open one: the next tick is held behind it.
    assert daemon.run_once(_at(40)).held == 1


def test_backfill_makes_the_latest_missed_ticks_up_to_the_bound(
        database, client):
    conf = config.make_conf(**{'scheduler.schedule_backfill_max_runs': 3})
    schedule = _create(database, conf, client, 'allow')
    daemon = _daemon(database, conf, client)
    # Down from 10 to 75: ticks 10, 20, ..., 70; the latest three run.
    assert daemon.run_once(_at(75)).created == 3
    assert _statuses(database) == [('50', 'PENDING'), ('60', 'PENDING'),
                                   ('70', 'PENDING')]
    shown = _schedule(database, conf, client, schedule.id)
    assert (shown.last_tick_at, shown.next_tick_at) == (_at(70), _at(80))


def test_backfill_is_one_run_under_a_policy_other_than_allow(
        database, client):
    conf = config.make_conf(**{'scheduler.schedule_backfill_max_runs': 3})
    _create(database, conf, client, 'skip')
    assert _daemon(database, conf, client).run_once(_at(75)).created == 1
    assert _statuses(database) == [('70', 'PENDING')]


def test_a_paused_schedule_ticks_nothing_and_moves_on(database, conf,
                                                      client):
    schedule = _create(database, conf, client, 'allow')
    paused = {schedule.id}
    daemon = _daemon(database, conf, client,
                     paused=lambda row: row.id in paused)
    result = daemon.run_once(_at(10))
    assert (result.created, result.passed_over) == (0, 1)
    assert _orders(database) == []
    assert _schedule(database, conf, client,
                     schedule.id).next_tick_at == _at(20)
    paused.clear()
    assert daemon.run_once(_at(20)).created == 1


def test_a_paris_schedule_ticks_once_across_spring_forward(database, conf,
                                                           client):
    created = datetime.datetime(2026, 3, 27, 12)
    schedule = _api(database, conf, client, now=created).create(
        'certificate', META, project_id='p', cron='30 2 * * *',
        timezone='Europe/Paris')
    assert schedule.next_tick_at == datetime.datetime(2026, 3, 28, 1, 30)
    daemon = _daemon(database, conf, client)
    seen = []
    # The daemon wakes at each tick the schedule names.
    for _ in range(3):
        tick = _schedule(database, conf, client, schedule.id).next_tick_at
        daemon.run_once(tick)
        seen.append(tick)
    assert seen == [datetime.datetime(2026, 3, 28, 1, 30),
                    datetime.datetime(2026, 3, 29, 1, 30),   # 03:30 CEST
                    datetime.datetime(2026, 3, 30, 0, 30)]
    assert len(_orders(database)) == 3


def test_a_new_york_schedule_runs_the_repeated_hour_once(database, conf,
                                                         client):
    created = datetime.datetime(2026, 11, 1, 4, 50)
    schedule = _api(database, conf, client, now=created).create(
        'certificate', META, project_id='p', cron='30 1 * * *',
        timezone='America/New_York')
    daemon = _daemon(database, conf, client)
    # Looks every ten minutes through the night, both passes of 01:xx.
    for minutes in range(0, 180, 10):
        daemon.run_once(created + datetime.timedelta(minutes=minutes))
    [order] = _orders(database)
    assert order.idempotency_key.endswith('2026-11-01T05:30:00Z')
    assert _schedule(database, conf, client, schedule.id).next_tick_at == \
        datetime.datetime(2026, 11, 2, 6, 30)


def test_trigger_makes_an_order_now_and_keeps_the_next_tick(
        database, conf, client):
    schedule = _create(database, conf, client, 'skip')
    api = _api(database, conf, client, now=_at(3))
    order = api.trigger(schedule.id, project_id='p')
    again = api.trigger(schedule.id, all_projects=True)
    assert order.id != again.id
    assert order.schedule_id == schedule.id
    assert order.idempotency_key.startswith('schedule:%s:trigger:'
                                            % schedule.id)
    shown = api.get(schedule.id, project_id='p')
    assert (shown.next_tick_at, shown.last_order_id, shown.last_tick_at) == (
        _at(10), again.id, _at(3))
    # The next tick's overlap policy sees the triggered order.
    result = _daemon(database, conf, client).run_once(_at(10))
    assert (result.created, result.passed_over) == (0, 1)


def test_trigger_of_another_project_s_schedule_is_not_found(
        database, conf, client):
    schedule = _create(database, conf, client, 'allow')
    with pytest.raises(schedule_api.ScheduleNotFound):
        _api(database, conf, client).trigger(schedule.id, project_id='q')
    assert _orders(database) == []


@pytest.mark.parametrize('kwargs, message', [
    ({'cron': '0 3 * * *', 'timezone': 'Europe/Pariss'},
     "unknown time zone 'Europe/Pariss'"),
    ({'every': 60, 'timezone': 'Europe/Paris'}, 'cron expression only'),
    ({'every': 60, 'overlap': 'queue'}, "not 'queue'"),
    ({'cron': '0 25 * * *'}, "hour field '25'.*25 is out of range 0-23")])
def test_create_refuses_what_is_wrong_by_name(database, conf, client, kwargs,
                                              message):
    with pytest.raises(schedule_api.InvalidSchedule, match=message):
        _api(database, conf, client).create('certificate', META,
                                            project_id='p', **kwargs)
    assert _api(database, conf, client).list(all_projects=True) == []
