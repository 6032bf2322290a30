"""The retry daemons' ticks of schedules (``scheduler.ticks``): one order
per tick whatever the daemons do, missed ticks collapsed, refusals
skipped; on the in-memory database with a recording RPC client."""

import datetime
import threading

import pytest

from scheduler import ticks
from tests import config
from tests import fakes
from worker import api
from worker import rpcapi
from worker import schedule_api


@pytest.fixture
def database(sqlite_database):
    """SQLite, not the fake: the API's queries (``worker.db.queries``)
    are SQL only."""
    return sqlite_database


NOW = datetime.datetime(2026, 11, 26, 12, 0, 0)
META = {'unavailable_attempts': 1}


def _at(seconds):
    return NOW + datetime.timedelta(seconds=seconds)


@pytest.fixture
def conf():
    return config.make_conf(**{'scheduler.schedule_check_seconds': 5})


def _api(database, conf, client, at=0):
    return schedule_api.ScheduleAPI(database, conf, rpcapi.WorkerAPI(client),
                                    now=lambda: _at(at))


def _daemon(database, conf, client, stop=None):
    return ticks.Ticks(conf, database, _api(database, conf, client),
                       stop or threading.Event())


def _orders(database):
    with database.reader() as session:
        return sorted((order for order in
                       database.repositories.orders.list_orders(session)),
                      key=lambda order: order.idempotency_key)


def _create(database, conf, client, every=2, order_type='certificate',
            meta=META):
    """A schedule created at NOW: its first tick is at +``every``."""
    return _api(database, conf, client).create(
        order_type, meta, project_id='p', every=every)


def test_a_due_tick_makes_one_order_and_its_steps_are_cast(
        database, conf, client):
    schedule = _create(database, conf, client)
    daemon = _daemon(database, conf, client)
    assert daemon.run_once(_at(1.9)).created == 0
    result = daemon.run_once(_at(2.1))
    [order] = _orders(database)
    assert (order.schedule_id, order.project_id, order.idempotency_key,
            order.meta, order.type) == (
        schedule.id, 'p', 'schedule:%s:2026-11-26T12:00:02Z' % schedule.id,
        META, 'certificate')
    assert client.count_by_order() == {order.id: 1}
    shown = _api(database, conf, client).get(schedule.id, project_id='p')
    assert (shown.last_tick_at, shown.last_order_id, shown.next_tick_at) == (
        _at(2), order.id, _at(4))
    # Woken at the next tick (1.9 s away, less the look's own wall time,
    # which a busy machine stretches without bound), not at
    # schedule_check_seconds (5, less the same).
    assert conf.scheduler.schedule_check_seconds == 5
    assert result.created == 1 and 0 <= result.next_look_in <= 1.9


def test_a_ticks_order_is_announced_once_by_the_daemon_that_made_it(
        database, conf, client):
    _create(database, conf, client)
    announcer = fakes.RecordingAnnouncer()
    daemon = ticks.Ticks(conf, database, schedule_api.ScheduleAPI(
        database, conf, rpcapi.WorkerAPI(client), now=lambda: _at(2.5),
        announcer=announcer), threading.Event())
    assert daemon.run_once(_at(2.5)).created == 1
    assert daemon.run_once(_at(2.6)).created == 0
    [order] = _orders(database)
    assert announcer.announced == [
        ('order.create', order.id, 'p', 'PENDING', None)]


def test_daemons_that_see_one_tick_make_one_order(database, conf, client):
    schedule = _create(database, conf, client)
    first, second = (_daemon(database, conf, client) for _ in range(2))
    with database.reader() as session:
        [read_by_second] = database.repositories.schedules.due(
            session, _at(2.5), 10)
    assert first.run_once(_at(2.5)).created == 1
    assert second.run_once(_at(2.6)).created == 0
    # A daemon slower still, that read the tick before the first moved
    # it: it finds the tick's order, creates none.
    again = _api(database, conf, client).create_order(read_by_second, _at(2))
    [order] = _orders(database)
    assert again.id == order.id and order.schedule_id == schedule.id
    assert client.count_by_order() == {order.id: 1}


def test_ticks_missed_while_every_daemon_was_down_make_one_order(
        database, conf, client):
    schedule = _create(database, conf, client)
    daemon = _daemon(database, conf, client)
    daemon.run_once(_at(2))
    with fakes.log_lines('scheduler.ticks') as lines:
        daemon.run_once(_at(11))     # ticks 4, 6, 8 and 10 were missed
    keys = [order.idempotency_key for order in _orders(database)]
    assert keys == ['schedule:%s:2026-11-26T12:00:%02dZ' % (schedule.id, s)
                    for s in (2, 10)]
    assert lines.about('3 missed ticks')
    assert _api(database, conf, client).get(
        schedule.id, project_id='p').next_tick_at == _at(12)


def test_a_refused_tick_is_skipped_and_the_others_go_on(database, conf,
                                                        client):
    good = _create(database, conf, client)
    gone = _create(database, conf, client, every=3)
    daemon = _daemon(database, conf, client)
    # Its type was uninstalled since.
    with database.session() as session, session.begin():
        database.repositories.schedules.delete(session, gone.id)
        database.repositories.schedules.create(
            session, 'p', 'uninstalled', {}, 0, 3, None, _at(3), NOW)
    with fakes.log_lines('scheduler.ticks') as lines:
        result = daemon.run_once(_at(3))
    assert (result.created, result.skipped, result.failed) == (1, 1, 0)
    [refused] = lines.about('was refused and the tick skipped')
    assert 'uninstalled' in refused[0]
    [order] = _orders(database)
    assert order.schedule_id == good.id
    shown = {s.type: s for s in _api(database, conf, client).list(
        all_projects=True)}
    assert (shown['uninstalled'].next_tick_at,
            shown['uninstalled'].last_order_id) == (_at(6), None)


def test_a_failed_create_leaves_the_tick_due_without_a_busy_loop(
        database, conf, client, monkeypatch):
    schedule = _create(database, conf, client)
    daemon = _daemon(database, conf, client)
    monkeypatch.setattr(
        schedule_api.ScheduleAPI, 'create_order',
        lambda *args: (_ for _ in ()).throw(RuntimeError('database away')))
    result = daemon.run_once(_at(2))
    assert (result.failed, result.next_look_in) == (1, ticks.RETRY_SECONDS)
    assert _api(database, conf, client).get(
        schedule.id, project_id='p').next_tick_at == _at(2)
    monkeypatch.undo()
    assert daemon.run_once(_at(3)).created == 1


def test_the_next_look_is_at_most_schedule_check_seconds_away(
        database, conf, client):
    daemon = _daemon(database, conf, client)
    assert daemon.run_once(NOW).next_look_in == 5
    _create(database, conf, client, every=3600)
    assert daemon.run_once(NOW).next_look_in == 5


def test_a_stopping_daemon_makes_no_more_orders(database, conf, client):
    _create(database, conf, client)
    stop = threading.Event()
    stop.set()
    assert _daemon(database, conf, client, stop).run_once(_at(2)).created \
        == 0
    assert _orders(database) == []


def test_a_schedule_is_checked_as_an_order_is(database, conf, client):
    schedules = _api(database, conf, client)
    with pytest.raises(schedule_api.InvalidSchedule, match='one of the two'):
        schedules.create('certificate', {}, project_id='p')
    with pytest.raises(schedule_api.InvalidSchedule, match='a duration'):
        schedules.create('certificate', {}, project_id='p', every='1w')
    with pytest.raises(schedule_api.OrderAPIError, match='unknown order'):
        schedules.create('nope', {}, project_id='p', every=60)
    with pytest.raises(schedule_api.OrderAPIError, match='meta is invalid'):
        schedules.create('certificate', {'unavailable_attempts': -1},
                         project_id='p', every=60)
    with pytest.raises(schedule_api.OrderAPIError, match='priority'):
        schedules.create('certificate', {}, project_id='p', every=60,
                         priority=10)
    with pytest.raises(schedule_api.OrderAPIError, match='project_id'):
        schedules.create('certificate', {}, project_id='', every=60)
    assert schedules.list(all_projects=True) == []


def test_delete_stops_the_ticks_and_keeps_the_orders(database, conf,
                                                     client):
    schedule = _create(database, conf, client)
    daemon = _daemon(database, conf, client)
    daemon.run_once(_at(2))
    schedules = _api(database, conf, client)
    with pytest.raises(schedule_api.ScheduleNotFound):
        schedules.delete(schedule.id, project_id='other')
    schedules.delete(schedule.id, all_projects=True)
    with pytest.raises(schedule_api.ScheduleNotFound):
        schedules.get(schedule.id, all_projects=True)
    assert daemon.run_once(_at(10)).created == 0
    assert len(_orders(database)) == 1


def test_a_move_that_lost_a_race_is_not_a_failure(
        database, conf, client, monkeypatch):
    _create(database, conf, client)
    fakes.lose_races(monkeypatch, database.repositories.schedules,
                     'advance', 1)
    result = _daemon(database, conf, client).run_once(_at(2))
    # The order was made; another daemon moves the schedule on, or this
    # one at its next look, which finds the order by its key.
    assert (result.failed, len(_orders(database))) == (0, 1)
    assert _daemon(database, conf, client).run_once(_at(2.5)).created == 1
    assert len(_orders(database)) == 1


def test_a_paused_schedule_ticks_no_order_until_unpaused(database, conf,
                                                         client):
    paused = _create(database, conf, client)
    other = _create(database, conf, client)
    orders = api.OrderAPI(database, conf, now=lambda: NOW)
    orders.pause('schedule', paused.id, reason='maintenance')
    daemon = _daemon(database, conf, client)

    result = daemon.run_once(_at(2.1))

    assert (result.created, result.passed_over) == (1, 1)
    assert [order.schedule_id for order in _orders(database)] == [other.id]
    # Moved past its tick, not made up for once unpaused.
    shown = _api(database, conf, client).get(paused.id, project_id='p')
    assert (shown.next_tick_at, shown.last_order_id) == (_at(4), None)
    orders.unpause('schedule', paused.id)
    assert daemon.run_once(_at(4.1)).created == 2
    assert paused.id in {order.schedule_id for order in _orders(database)}
