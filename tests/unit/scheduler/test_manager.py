"""One retry pass against the in-memory database: every decision of a pass,
with time as a parameter and no server.

``tests/functional/test_scheduler_pass.py`` runs the same pass on the real
databases; these tests are the quick ones to run on every save.
"""

import collections
import datetime
import logging
import threading

import pytest

from scheduler import manager
from scheduler import pass_lock
from tests import config
from tests import fakes
from tests import singular
from worker.db import memory
from worker.db import models
from worker.db import orders
from worker import order_types
from worker import rpcapi

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)
CERTIFICATE = order_types.get('certificate')
REQUEST = 'process_type_order'
CHECK = 'check_certificate_status'
LOCK = pass_lock.LOCK
DAEMON = '1@scheduler-host'


def _seconds(value):
    return datetime.timedelta(seconds=value)


def _conf(**overrides):
    defaults = {'scheduler.batch_size': 7, 'host': 'test-host',
                'service_down_time': 60, 'report_interval': 10,
                'scheduler.schedule_jitter': 0.0}
    defaults.update(overrides)
    return config.make_conf(**defaults)


@pytest.fixture
def database():
    return memory.InMemoryDatabase()


def _write(database, action):
    with database.session() as session, session.begin():
        return action(database.repositories, session)


def _read(database, action):
    with database.reader() as session, session.begin():
        return action(database.repositories, session)


def _make_orders(database, count, due_in=-1, priority=0):
    """PENDING certificate orders of ``priority``, each waiting for its
    status check: a retry row of CHECK due at NOW + due_in."""
    def make(repos, session):
        ids = []
        for i in range(count):
            order_id = _waiting(repos, session, priority)
            singular.add_retry(repos.retry_tasks, session, order_id, CHECK,
                               NOW + _seconds(due_in) +
                               datetime.timedelta(milliseconds=i),
                               args=[order_id], kwargs={'generation': 0},
                               now=NOW, priority=priority)
            ids.append(order_id)
        return ids
    return _write(database, make)


def _waiting(repos, session, priority=0):
    """A certificate order whose request is DONE and whose status check
    waits for a retry row (not dispatched)."""
    order = repos.orders.create(session, CERTIFICATE, {}, NOW,
                                priority=priority)
    assert singular.claim(repos.steps, session, order.id, REQUEST, 0, NOW,
                          'w@h', NOW + _seconds(60))
    assert singular.finish(repos.steps, session, order.id, REQUEST, 1, NOW,
                           models.STEP_DONE, output={})
    singular.start(repos.steps, session, order.id, [CHECK], NOW,
                   dispatched=False)
    return order.id


def _manager(database, conf=None, client=None, **kwargs):
    client = client or fakes.RecordingRPCClient()
    # Crashed steps are dispatched again at once unless a test asks for
    # the spread (scheduler.recovery).
    kwargs.setdefault('randomness', fakes.Extreme())
    return manager.RetryManager(conf or _conf(), database,
                                rpcapi.WorkerAPI(client), **kwargs), client


def _run(database, conf=None, client=None, now=NOW, **kwargs):
    retry_manager, client = _manager(database, conf, client, **kwargs)
    return retry_manager.run_once(now), client


def _rows(database, parked=False):
    return _read(database, lambda repos, session:
                 repos.retry_tasks.list_tasks(session, parked=parked))


def _lock(database):
    return _read(database, lambda repos, session:
                 repos.locks.get(session, LOCK))


def _step(database, order_id, name):
    return _read(database, lambda repos, session:
                 repos.steps.for_order(session, order_id)[name])


def _heartbeat(database, name, at, kind=models.WORKER):
    _write(database, lambda repos, session: repos.services.heartbeat(
        session, name, kind, 'host', 1, at))


def test_due_rows_are_cast_once_deleted_and_marked_dispatched(database):
    due = _make_orders(database, 20)
    later = _make_orders(database, 3, due_in=60)

    result, client = _run(database)

    assert result.locked and not result.idle and result.dispatched == 20
    assert client.count_by_order() == {order_id: 1 for order_id in due}
    assert {row.order_id for row in _rows(database)} == set(later)
    # Marked at the time of the cast: the pass's start plus its progress.
    assert _step(database, due[0], CHECK).dispatched_at == pytest.approx(
        NOW, abs=_seconds(1))
    assert _step(database, later[0], CHECK).dispatched_at is None
    assert _lock(database) is None


def test_a_pass_with_nothing_due_only_reads(database):
    _heartbeat(database, DAEMON, NOW, models.SCHEDULER)
    _make_orders(database, 3, due_in=60)
    retry_manager, client = _manager(
        database, _conf(**{'scheduler.schedule_period_seconds': 600}),
        holder_name=DAEMON)
    # The first pass writes the daemon's pass record; later ones within
    # report_interval write nothing at all.
    assert retry_manager.run_once(NOW).idle

    def no_writes(*args, **kwargs):
        raise AssertionError('an idle pass wrote')
    database.session = no_writes
    result = retry_manager.run_once(NOW + _seconds(1))

    assert result.idle and not result.locked and client.casts == []
    # The next pass is planned for when the first row falls due.
    assert result.next_pass_in == pytest.approx(59, abs=0.01)


def test_fresh_lock_of_another_daemon_makes_the_pass_skip(database):
    _make_orders(database, 5)
    _write(database, lambda repos, session: repos.locks.insert(
        session, LOCK, 'other-host', 'other-token', NOW - _seconds(10)))

    result, client = _run(database)

    assert not result.locked and not result.idle and client.casts == []
    assert _lock(database).owner_token == 'other-token'
    assert len(_rows(database)) == 5


def test_lock_older_than_the_timeout_is_cleared_and_the_pass_runs(database):
    _make_orders(database, 5)
    _heartbeat(database, 'old-daemon', NOW, models.SCHEDULER)   # alive
    _write(database, lambda repos, session: repos.locks.insert(
        session, LOCK, 'old-daemon', 'old-token', NOW - _seconds(301)))

    result, _ = _run(database,
                     _conf(**{'scheduler.retry_lock_timeout_seconds': 300}))

    assert result.stale_lock_cleared and result.locked
    assert result.dispatched == 5 and _lock(database) is None


@pytest.mark.parametrize('holder_beat_ago, cleared', [(61, True),
                                                      (59, False)])
def test_young_lock_is_cleared_only_when_its_holder_died(
        database, holder_beat_ago, cleared):
    _make_orders(database, 3)
    _heartbeat(database, '7@holder', NOW - _seconds(holder_beat_ago),
               models.SCHEDULER)
    _write(database, lambda repos, session: repos.locks.insert(
        session, LOCK, '7@holder', 'holder-token', NOW - _seconds(61)))

    result, client = _run(database)

    assert result.stale_lock_cleared is cleared
    assert result.locked is cleared
    assert bool(client.casts) is cleared


def _claimed(database, owner, at, lease_seconds=86400):
    """A certificate order whose request ``owner`` claimed at ``at``
    (generation 1), for a lease of ``lease_seconds``."""
    def make(repos, session):
        order = repos.orders.create(session, CERTIFICATE, {}, at)
        assert singular.claim(repos.steps, session, order.id, REQUEST, 0, at,
                              owner, at + _seconds(lease_seconds))
        return order.id
    return _write(database, make)


def test_a_step_of_a_dead_owner_is_taken_back_as_a_crash_and_cast_soon(
        database):
    _heartbeat(database, '5@live', NOW)
    _heartbeat(database, '6@dead', NOW - _seconds(61))
    kept = _claimed(database, '5@live', NOW - _seconds(3600))
    lost = _claimed(database, '6@dead', NOW - _seconds(120))
    interval = _conf().report_interval

    result, client = _run(database, randomness=fakes.Extreme(highest=True))

    assert result.recovered == 1 and result.dead_services == ['6@dead']
    step = _step(database, lost, REQUEST)
    assert (step.owner, step.generation, step.failures, step.crashes) == (
        None, 2, 0, 1)
    # Cast at a random moment within report_interval (per crash): the
    # steps of one dead process do not all reach the workers together.
    assert client.casts == []
    [row] = _rows(database)
    assert row.retry_at == NOW + _seconds(interval)
    _, client = _run(database, client=client, now=NOW + _seconds(interval))
    # Its new token is in the cast; the old one (1) is stale.
    assert client.casts == [(REQUEST, {'order_id': lost, 'generation': 2})]
    # A step whose owner is alive is not taken while its lease lasts,
    # however long it runs.
    assert _step(database, kept, REQUEST).owner == '5@live'


def test_a_step_past_its_lease_is_taken_back_as_a_failed_run(database):
    _heartbeat(database, '5@live', NOW)
    hung = _claimed(database, '5@live', NOW - _seconds(120),
                    lease_seconds=60)
    running = _claimed(database, '5@live', NOW - _seconds(120),
                       lease_seconds=180)

    result, client = _run(database)

    assert result.recovered == 1 and result.dead_services == []
    assert client.casts == [(REQUEST, {'order_id': hung, 'generation': 2})]
    step = _step(database, hung, REQUEST)
    assert (step.owner, step.generation, step.failures, step.last_error) == (
        None, 2, 1, 'its lease ended on 5@live')
    assert _step(database, running, REQUEST).owner == '5@live'


def test_a_dispatch_no_worker_took_up_is_taken_back(database):
    conf = _conf(**{'scheduler.dispatch_deadline_seconds': 30})
    order_id = _write(database, lambda repos, session: repos.orders.create(
        session, CERTIFICATE, {}, NOW - _seconds(31)).id)
    waiting = _write(database, lambda repos, session: repos.orders.create(
        session, CERTIFICATE, {}, NOW - _seconds(29)).id)

    result, client = _run(database, conf)

    assert result.recovered == 1
    assert client.casts == [(REQUEST, {'order_id': order_id,
                                       'generation': 1})]
    assert _step(database, order_id, REQUEST).generation == 1
    assert _step(database, waiting, REQUEST).generation == 0


def test_each_parallel_step_of_an_order_is_taken_back(database):
    conf = _conf(**{'scheduler.dispatch_deadline_seconds': 30})
    order_id = _write(database, lambda repos, session: repos.orders.create(
        session, order_types.get('fanout'), {}, NOW - _seconds(31)).id)

    result, client = _run(database, conf)

    assert result.recovered == 3
    assert sorted(client.casts) == [
        (name, {'order_id': order_id, 'generation': 1})
        for name in ('check_caa', 'check_domains', 'check_key')]


def test_a_run_taken_back_from_its_owner_ends_in_its_orders_history(
        database):
    _heartbeat(database, '5@live', NOW)
    _heartbeat(database, '6@dead', NOW - _seconds(61))
    dead = _claimed(database, '6@dead', NOW - _seconds(120))
    hung = _claimed(database, '5@live', NOW - _seconds(120),
                    lease_seconds=60)
    never_claimed = _write(database, lambda repos, session: repos.orders
                           .create(session, CERTIFICATE, {},
                                   NOW - _seconds(3600)).id)

    result, _ = _run(database)

    assert result.recovered == 3

    def history(order_id):
        return [(run.step, run.generation, run.attempt, run.worker,
                 run.started_at, run.finished_at, run.result, run.error)
                for run in _read(database, lambda repos, session:
                                 repos.history.for_order(session, order_id))]
    claimed_at = NOW - _seconds(120)
    assert history(dead) == [
        (REQUEST, 1, 1, '6@dead', claimed_at, NOW, models.RUN_TAKEN_BACK,
         'its owner 6@dead stopped heartbeating while running it (crash 1 '
         'of this step)')]
    assert history(hung) == [
        (REQUEST, 1, 1, '5@live', claimed_at, NOW, models.RUN_TAKEN_BACK,
         'its lease ended on 5@live')]
    # A dispatch that no worker took up had no run.
    assert history(never_claimed) == []


def test_recovery_looks_once_per_report_interval(database):
    retry_manager, client = _manager(database)
    assert retry_manager.run_once(NOW).idle      # looked: nothing lost
    _heartbeat(database, '6@dead', NOW - _seconds(61))
    lost = _claimed(database, '6@dead', NOW - _seconds(120))

    assert retry_manager.run_once(NOW + _seconds(9)).idle
    result = retry_manager.run_once(NOW + _seconds(10))

    assert result.recovered == 1
    assert client.count_by_order() == {lost: 1}


def test_bad_rows_are_parked_and_the_rows_behind_them_cast(database):
    victims = _make_orders(database, 2, due_in=-100)
    good = _make_orders(database, 10)

    def spoil(repos, session):
        repos.retry_tasks.delete_for_order(session, victims[0])
        singular.add_retry(repos.retry_tasks, session, victims[0],
                           'format_hard_disk', NOW - _seconds(100),
                           args=[victims[0]], now=NOW)
        repos.retry_tasks.delete_for_order(session, victims[1])
        singular.add_retry(repos.retry_tasks, session, victims[1], CHECK,
                           NOW - _seconds(100), args=[victims[1]],
                           kwargs={'bogus': 1}, now=NOW)
    _write(database, spoil)

    result, client = _run(database)

    assert result.parked == 2 and result.dispatched == 10
    assert set(client.count_by_order()) == set(good)
    reasons = sorted(row.park_reason for row in _rows(database, True))
    assert 'do not fit' in reasons[0]
    assert reasons[1] == ('order %s has no step format_hard_disk (or no '
                          'longer exists)' % victims[0])
    # Parked rows are never due again.
    result, client = _run(database)
    assert result.idle and client.casts == []


def test_a_failed_cast_keeps_its_rows_for_the_next_pass(database):
    due = _make_orders(database, 10)
    unlucky = set(due[2:4])
    client = fakes.RecordingRPCClient(
        fail=lambda method, kwargs: kwargs['order_id'] in unlucky)

    result, _ = _run(database, _conf(**{'scheduler.rows_per_cast': 1}),
                     client)

    assert result.dispatched == 8 and result.cast_failures == 2
    assert {row.order_id for row in _rows(database)} == unlucky
    # Kept rows wait for the next slot (period 15 s, no jitter), so that a
    # failing broker cannot cause a tight loop.
    assert result.next_pass_in == pytest.approx(15, abs=0.5)


SLOW = 'slow_topic'
FANOUT = order_types.get('fanout')


def _fanout_orders(database, count):
    """Fanout orders whose check_caa waits for a retry row due now."""
    def make(repos, session):
        ids = []
        for _ in range(count):
            order = repos.orders.create(session, FANOUT, {}, NOW)
            singular.add_retry(repos.retry_tasks, session, order.id,
                               'check_caa', NOW, args=[order.id],
                               kwargs={'generation': 0}, now=NOW)
            ids.append(order.id)
        return ids
    return _write(database, make)


def _run_routed(database, clients, **overrides):
    """A pass whose fanout steps go to ``SLOW``: fake clients by topic."""
    conf = _conf(**dict({'order_type:fanout.topic': SLOW}, **overrides))
    worker_api = rpcapi.WorkerAPI(clients[conf.worker.topic],
                                  rpcapi.Topics(conf, clients.__getitem__))
    return manager.RetryManager(conf, database, worker_api,
                                randomness=fakes.Extreme()).run_once(NOW)


def test_each_due_row_is_cast_to_its_order_types_topic(database):
    certificates = _make_orders(database, 3)
    fanouts = _fanout_orders(database, 4)
    clients = collections.defaultdict(fakes.RecordingRPCClient)

    result = _run_routed(database, clients,
                         **{'scheduler.cast_concurrency': 1})

    assert result.dispatched == 7 and _rows(database) == []
    assert clients[SLOW].count_by_order() == {
        order_id: 1 for order_id in fanouts}
    assert clients['barbican_retry_worker'].count_by_order() == {
        order_id: 1 for order_id in certificates}
    # One batch of two types: one message per topic.
    assert [len(clients[topic].messages)
            for topic in ('barbican_retry_worker', SLOW)] == [1, 1]


def test_a_failed_topic_keeps_only_its_own_rows(database):
    certificates = _make_orders(database, 3)
    fanouts = _fanout_orders(database, 4)
    clients = collections.defaultdict(fakes.RecordingRPCClient)
    clients[SLOW] = fakes.RecordingRPCClient(fail=lambda *_: True)

    result = _run_routed(database, clients)

    assert result.dispatched == 3 and result.cast_failures == 4
    assert {row.order_id for row in _rows(database)} == set(fanouts)
    assert set(clients['barbican_retry_worker'].count_by_order()) == set(
        certificates)


class _LockThief(fakes.RecordingRPCClient):
    """Casts, then lets another daemon take the lock as if ours were
    cleared as stale."""

    def __init__(self, database):
        super().__init__()
        self._database = database

    def cast(self, ctxt, method, **kwargs):
        super().cast(ctxt, method, **kwargs)

        def steal(repos, session):
            repos.locks.force_release(session, LOCK)
            repos.locks.insert(session, LOCK, 'thief', 'thief', NOW)
        _write(self._database, steal)


def test_a_lost_lock_stops_the_pass_without_deleting(database):
    _make_orders(database, 10)
    client = _LockThief(database)

    result, _ = _run(database, _conf(**{'scheduler.cast_concurrency': 1}),
                     client)

    assert result.lock_lost and result.dispatched == 0
    assert len(client.casts) == 7          # one batch, no second one
    assert len(_rows(database)) == 10
    assert _lock(database).owner_token == 'thief'


def test_a_stopping_daemon_ends_its_pass_after_the_current_batch(database):
    _make_orders(database, 20)
    stop = threading.Event()

    class StopAfterFirst(fakes.RecordingRPCClient):
        def cast(self, ctxt, method, **kwargs):
            super().cast(ctxt, method, **kwargs)
            stop.set()

    retry_manager, client = _manager(
        database, _conf(**{'scheduler.cast_concurrency': 1}),
        StopAfterFirst(), stop_event=stop)
    result = retry_manager.run_once(NOW)

    assert result.dispatched == 7 and len(_rows(database)) == 13
    assert _lock(database) is None


class _StopAfterFirstBatch(fakes.RecordingRPCClient):
    """Makes the pass stop after its first batch, as when it reaches
    max_pass_seconds: more rows are due than the pass casts."""

    def __init__(self, stop):
        super().__init__()
        self._stop = stop

    def cast(self, ctxt, method, **kwargs):
        super().cast(ctxt, method, **kwargs)
        self._stop.set()


def test_a_pass_that_cannot_cast_every_due_row_casts_the_urgent_first(
        database):
    # The oldest rows are the least urgent; batches of 7.
    low = _make_orders(database, 10, due_in=-300)
    mid = _make_orders(database, 4, due_in=-200, priority=5)
    urgent = _make_orders(database, 5, due_in=-1, priority=9)
    stop = threading.Event()
    retry_manager, client = _manager(
        database, _conf(**{'scheduler.cast_concurrency': 1}),
        _StopAfterFirstBatch(stop), stop_event=stop)

    result = retry_manager.run_once(NOW)

    assert result.dispatched == 7
    assert [kwargs['order_id'] for _, kwargs in client.casts] == \
        urgent + mid[:2]
    assert {row.order_id for row in _rows(database)} == set(mid[2:] + low)

    # The next pass goes on where the priorities say, not by age.
    result, client = _run(database, _conf(
        **{'scheduler.cast_concurrency': 1}))
    assert result.dispatched == 12
    assert [kwargs['order_id'] for _, kwargs in client.casts] == \
        mid[2:] + low


def test_a_step_taken_back_keeps_its_orders_priority(database):
    _heartbeat(database, '6@dead', NOW - _seconds(61))

    def claimed(repos, session):
        order = repos.orders.create(session, CERTIFICATE, {}, NOW,
                                    priority=7)
        assert singular.claim(repos.steps, session, order.id, REQUEST, 0, NOW,
                              '6@dead', NOW + _seconds(3600))
        return order.id
    lost = _write(database, claimed)
    # The cast fails: the row stays, as recovery wrote it.
    client = fakes.RecordingRPCClient(fail=lambda method, kwargs: True)

    result, _ = _run(database, client=client)

    assert result.recovered == 1 and result.cast_failures == 1
    [row] = _rows(database)
    assert (row.order_id, row.retry_task, row.priority) == (lost, REQUEST, 7)


def test_the_next_pass_comes_when_a_waiting_row_falls_due(database):
    _make_orders(database, 1, due_in=4)
    conf = _conf(**{'scheduler.schedule_period_seconds': 600})

    result, _ = _run(database, conf)

    assert result.idle
    assert result.next_pass_in == pytest.approx(4, abs=0.01)


def test_a_pass_records_when_it_ran_and_will_run_again(database):
    _heartbeat(database, DAEMON, NOW, models.SCHEDULER)
    _make_orders(database, 2)
    retry_manager, _ = _manager(database, holder_name=DAEMON,
                                measure_backlog=True)

    result = retry_manager.run_once(NOW)

    [daemon] = _read(database, lambda repos, session:
                     repos.services.list_services(session))
    assert result.dispatched == 2 and result.backlog == 0
    assert daemon.last_pass_at == NOW
    # Its slot: the only live daemon, period 15 s, no jitter.
    assert daemon.next_pass_at == pytest.approx(NOW + _seconds(15),
                                                abs=_seconds(0.1))


def test_an_idle_pass_records_only_once_per_report_interval(database):
    _heartbeat(database, DAEMON, NOW, models.SCHEDULER)
    retry_manager, _ = _manager(database, holder_name=DAEMON)

    def last_pass():
        [daemon] = _read(database, lambda repos, session:
                         repos.services.list_services(session))
        return daemon.last_pass_at

    retry_manager.run_once(NOW)
    retry_manager.run_once(NOW + _seconds(5))
    assert last_pass() == NOW
    retry_manager.run_once(NOW + _seconds(11))
    assert last_pass() == NOW + _seconds(11)


def test_a_daemon_whose_clock_is_off_casts_but_judges_no_one(database):
    """Beyond max_clock_offset_seconds: no step taken back, no lock
    cleared; due rows are still cast. Trusted again, it does both."""
    _heartbeat(database, '6@dead', NOW - _seconds(61))
    lost = _claimed(database, '6@dead', NOW - _seconds(120))
    _make_orders(database, 2)
    trusted = [False]
    retry_manager, client = _manager(database,
                                     clock_trusted=lambda: trusted[0])

    result = retry_manager.run_once(NOW)
    assert (result.recovered, result.dispatched) == (0, 2)
    assert _step(database, lost, REQUEST).owner == '6@dead'

    _write(database, lambda repos, session: repos.locks.insert(
        session, LOCK, '6@dead', 'dead-token', NOW - _seconds(3600)))
    result = retry_manager.run_once(NOW + _seconds(1))
    assert not result.stale_lock_cleared and not result.locked
    assert _lock(database).owner_token == 'dead-token'

    trusted[0] = True
    result = retry_manager.run_once(NOW + _seconds(2))
    assert result.stale_lock_cleared and result.recovered == 1
    assert _step(database, lost, REQUEST).owner is None


def test_lost_races_of_a_pass_are_run_again_not_failed(
        database, monkeypatch):
    _heartbeat(database, '6@dead', NOW - _seconds(61))
    lost = _claimed(database, '6@dead', NOW - _seconds(120))
    due = _make_orders(database, 5)
    repos = database.repositories
    # Recovery's transaction and the dispatcher's delete each lose twice.
    fakes.lose_races(monkeypatch, repos.services, 'delete_dead', 2)
    fakes.lose_races(monkeypatch, repos.retry_tasks, 'delete_as_read', 2)

    result, client = _run(database)

    assert result.recovered == 1 and result.dead_services == ['6@dead']
    assert result.dispatched == 6
    assert client.count_by_order() == dict.fromkeys(due + [lost], 1)
    assert _rows(database) == [] and _lock(database) is None
    # Each transaction was written once: one new token for the lost step.
    assert _step(database, lost, REQUEST).generation == 2


# Request ids: a row's go with its cast and on the lines about it.

@pytest.fixture
def records():
    with fakes.log_lines('scheduler') as found:
        yield found.found


def test_a_step_taken_back_is_cast_with_its_orders_request_ids(
        database, records):
    _heartbeat(database, '6@dead', NOW - _seconds(61))

    def make(repos, session):
        order = repos.orders.create(
            session, CERTIFICATE, {}, NOW - _seconds(120),
            origin=orders.Origin(request_id='req-a',
                                 global_request_id='req-global-a'))
        assert singular.claim(repos.steps, session, order.id, REQUEST, 0, NOW,
                              '6@dead', NOW + _seconds(60))
        return order.id
    order_id = _write(database, make)

    result, client = _run(database)

    assert result.recovered == 1
    [sent] = client.contexts
    assert sent['orders'] == {order_id: ['req-a', 'req-global-a']}
    about = [(message, level, ctxt) for message, level, ctxt, _ in records
             if order_id in message]
    assert [message.split(' of order')[0] for message, _, _ in about] == [
        'Step %s' % REQUEST, 'Cast step %s' % REQUEST]
    assert about[1][1] == logging.DEBUG
    assert {(ctxt.request_id, ctxt.global_request_id)
            for _, _, ctxt in about} == {('req-a', 'req-global-a')}


def test_a_row_set_aside_is_logged_with_its_request_ids(database, records):
    [order_id] = _make_orders(database, 1)
    _write(database, lambda repos, session: singular.add_retry(
        repos.retry_tasks, session, order_id, 'no_such_step',
        NOW - _seconds(1), args=[order_id],
        kwargs={'generation': 0, 'request_id': 'req-a'}, now=NOW))

    _run(database)

    [ctxt] = [ctxt for message, _, ctxt, _ in records
              if 'set aside:' in message]
    assert ctxt.request_id == 'req-a'


def test_a_step_taken_back_frees_its_slots_and_wakes_a_waiting_step(
        database):
    _heartbeat(database, '5@live', NOW)
    hung = _claimed(database, '5@live', NOW - _seconds(120),
                    lease_seconds=60)
    waiting = _write(database, lambda repos, session: repos.orders.create(
        session, CERTIFICATE, {}, NOW).id)
    # An orphan: its holder's step (generation 0, never claimed) does
    # not run.
    orphan_holder = _write(database, lambda repos, session:
                           repos.orders.create(session, CERTIFICATE, {},
                                               NOW).id)

    def hold(repos, session):
        repos.resources.take(session, 'ca:x', 0, (hung, REQUEST, 1), NOW)
        repos.resources.take(session, 'ca:y', 0,
                             (orphan_holder, REQUEST, 1), NOW)
        singular.add_retry(repos.retry_tasks, session, waiting, REQUEST,
                           NOW + _seconds(30), args=[waiting],
                           kwargs={'generation': 0}, now=NOW,
                           waiting_for='ca:x')
    _write(database, hold)

    result, client = _run(database)

    assert result.recovered == 1
    assert _read(database, lambda repos, session: repos.resources.held(
        session, ['ca:x', 'ca:y'])) == {'ca:x': set(), 'ca:y': set()}
    # The waiting step was made due and cast by the same pass, before its
    # recheck.
    assert sorted(client.casts, key=str) == sorted([
        (REQUEST, {'order_id': hung, 'generation': 2}),
        (REQUEST, {'order_id': waiting, 'generation': 0})], key=str)


def _database_away(*args, **kwargs):
    raise ConnectionError('the database is away')


def test_a_daemon_back_from_an_outage_judges_no_one_for_a_down_time(
        database, monkeypatch):
    """While the database was away no process could heartbeat. Back, the
    daemon casts due rows but takes no step back until every live process
    had service_down_time to heartbeat again; then the dead are judged."""
    down_time = _conf().service_down_time
    _heartbeat(database, '5@live', NOW - _seconds(down_time + 1))
    _heartbeat(database, '6@dead', NOW - _seconds(down_time + 1))
    kept = _claimed(database, '5@live', NOW - _seconds(120))
    lost = _claimed(database, '6@dead', NOW - _seconds(120))
    _make_orders(database, 2)
    retry_manager, client = _manager(database)
    with monkeypatch.context() as patch:
        patch.setattr(database, 'reader', _database_away)
        with pytest.raises(ConnectionError):
            retry_manager.run_once(NOW)

    result = retry_manager.run_once(NOW + _seconds(1))
    assert (result.recovered, result.dispatched) == (0, 2)
    assert _step(database, kept, REQUEST).owner == '5@live'
    assert _step(database, lost, REQUEST).owner == '6@dead'

    _heartbeat(database, '5@live', NOW + _seconds(2))
    result = retry_manager.run_once(NOW + _seconds(down_time))
    assert result.recovered == 1 and result.dead_services == ['6@dead']
    assert _step(database, kept, REQUEST).owner == '5@live'
    assert _step(database, lost, REQUEST).owner is None
