"""Signals as systemd sends them to a real barbican-retry, over RabbitMQ.

barbican-retry is one process (``scheduler.in_process``):

- SIGHUP (``ExecReload=/bin/kill -HUP $MAINPID``): it re-reads the
  configuration files (``mutate``: only mutable options take the new
  value; an invalid file is refused) and plans its next pass from them, in
  place. A pass under way finishes first.
- SIGTERM (``KillMode=mixed``): the pass under way stops after its batch
  and releases the lock; the process exits 0, or 1 if that took longer
  than ``graceful_shutdown_timeout``.

SQLite is enough here: the signals behave the same on every backend, and
the lock and batch logic is covered on all three by test_end_to_end.
"""

import os
import signal
import socket
import time

import pytest

from tests.functional import counting
from tests.functional import databases
from tests.functional import processes
from worker.db import locks
from worker.db import migration
from worker.db import models
from worker.db import retry_tasks
from worker.db import session as db_session

GRACEFUL_SHUTDOWN_TIMEOUT = 20


@pytest.fixture
def sqlite_url(tmp_path):
    """URL of an empty SQLite database of its own."""
    return databases.create('sqlite', tmp_path)


@pytest.fixture
def sqlite_database(sqlite_url):
    """A migrated SQLite ``Database``."""
    database = db_session.Database.from_url(sqlite_url)
    migration.upgrade(database.engine)
    yield database
    database.dispose()


@pytest.fixture
def topic():
    return processes.new_topic()


@pytest.fixture
def counter(transport_url, topic):
    """An RPC server on the test's topic that counts what it receives."""
    with counting.counting_server(transport_url, topic) as endpoint:
        yield endpoint


@pytest.fixture
def retry_daemon(tmp_path):
    """Start barbican-retry on a config file; killed at the end."""
    started = []

    def start(config):
        daemon = processes.Daemon('barbican-retry', config,
                                  tmp_path / 'retry.log')
        started.append(daemon.start())
        return daemon

    yield start
    for daemon in started:
        daemon.kill()


def _config(tmp_path, sqlite_url, transport_url, topic, **scheduler):
    scheduler.setdefault('schedule_jitter', 0.2)
    return processes.write_config(
        tmp_path / 'barbican-retry.conf', sqlite_url, transport_url, topic,
        {'DEFAULT': {'graceful_shutdown_timeout':
                     GRACEFUL_SHUTDOWN_TIMEOUT},
         'scheduler': scheduler})


def _remaining(database):
    """Order ids of the retry rows still in the table."""
    with database.session() as session:
        return {task.order_id for task in retry_tasks.list_tasks(session)}


def _lock(database):
    with database.session() as session:
        return locks.get(session, models.ORDER_RETRY_TASK_LOCK)


def _wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError('%s: not within %ss' % (what, timeout))


def _wait_until_quiet(endpoint, quiet=2.0, timeout=60):
    """Wait until the counter received nothing for ``quiet`` seconds.

    Casts that left before a daemon stopped may still be on their way.
    """
    deadline = time.monotonic() + timeout
    last, since = endpoint.total(), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now_total = endpoint.total()
        if now_total != last:
            last, since = now_total, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
    raise AssertionError('messages still arriving after %ss' % timeout)


def _assert_exactly_once(endpoint, all_ids, remaining):
    """Every row was either cast exactly once or is still in the table."""
    received = set(endpoint.received)
    duplicated = {order_id: n for order_id, n in endpoint.received.items()
                  if n != 1}
    assert duplicated == {}, 'cast more than once'
    assert received - all_ids == set(), 'cast rows that do not exist'
    assert received & remaining == set(), 'cast but not deleted'
    assert all_ids - received - remaining == set(), 'lost: deleted, not cast'


def test_sighup_applies_a_new_period_without_losing_a_retry(
        tmp_path, sqlite_url, sqlite_database, transport_url, topic,
        counter, retry_daemon):
    config = _config(tmp_path, sqlite_url, transport_url, topic,
                     schedule_period_seconds=30)
    daemon = retry_daemon(config)
    daemon.wait_for_log('Retry scheduler started: period 30s')
    all_ids = counting.add_due_retries(sqlite_database, 200)

    _config(tmp_path, sqlite_url, transport_url, topic,
            schedule_period_seconds=1)
    # As ExecReload=/bin/kill -HUP $MAINPID does: the master only.
    os.kill(daemon.process.pid, signal.SIGHUP)
    daemon.wait_for_log('Configuration reloaded: period 1s', timeout=30)
    reloaded_at = len(daemon.log())

    _wait_until(lambda: counter.total() >= len(all_ids), 30,
                'all due retries cast after the reload')
    # Passes now come every second or so (passes log at DEBUG).
    _wait_until(lambda: daemon.log()[reloaded_at:].count('Pass ') >= 3, 10,
                'three passes after the reload')
    _wait_until_quiet(counter)
    assert daemon.process.poll() is None, 'the daemon must survive SIGHUP'
    assert daemon.stop(GRACEFUL_SHUTDOWN_TIMEOUT) == 0

    _assert_exactly_once(counter, all_ids, _remaining(sqlite_database))
    assert set(counter.received) == all_ids
    assert _remaining(sqlite_database) == set()
    assert _lock(sqlite_database) is None


def test_sighup_mid_pass_loses_and_duplicates_nothing(
        tmp_path, sqlite_url, sqlite_database, transport_url, topic,
        counter, retry_daemon):
    all_ids = counting.add_due_retries(sqlite_database, 3000)
    # One row per cast, one cast at a time: a pass takes seconds.
    config = _config(tmp_path, sqlite_url, transport_url, topic,
                     schedule_period_seconds=1, batch_size=50,
                     cast_concurrency=1, rows_per_cast=1)
    daemon = retry_daemon(config)
    _wait_until(lambda: counter.total() >= 100, 60, 'the pass under way')

    _config(tmp_path, sqlite_url, transport_url, topic,
            schedule_period_seconds=1, batch_size=100, cast_concurrency=2,
            rows_per_cast=1)
    os.kill(daemon.process.pid, signal.SIGHUP)
    daemon.wait_for_log('Configuration reloaded', timeout=30)

    _wait_until(lambda: counter.total() >= len(all_ids), 120,
                'all due retries cast')
    _wait_until_quiet(counter)
    assert daemon.stop(GRACEFUL_SHUTDOWN_TIMEOUT) == 0

    # The reload came while the first pass was casting; it waited for the
    # end of that pass.
    log = daemon.log()
    assert log.index('Caught SIGHUP') < log.index('Pass dispatched') < \
        log.index('Configuration reloaded'), log[-3000:]
    _assert_exactly_once(counter, all_ids, _remaining(sqlite_database))
    assert _remaining(sqlite_database) == set()
    assert _lock(sqlite_database) is None


def test_sighup_with_an_invalid_value_keeps_the_daemon_working(
        tmp_path, sqlite_url, sqlite_database, transport_url, topic,
        counter, retry_daemon):
    """A typo in the file and a reload must not stop the retries.

    The running configuration stays in force (the value is refused and
    the refusal logged); the daemon goes on casting due retries.
    """
    config = _config(tmp_path, sqlite_url, transport_url, topic,
                     schedule_period_seconds=1)
    daemon = retry_daemon(config)
    daemon.wait_for_log('Retry scheduler started: period 1s')

    _config(tmp_path, sqlite_url, transport_url, topic,
            schedule_period_seconds=0)      # below its min=1
    os.kill(daemon.process.pid, signal.SIGHUP)
    daemon.wait_for_log('Configuration reload refused', timeout=30)
    all_ids = counting.add_due_retries(sqlite_database, 100)

    _wait_until(lambda: counter.total() >= len(all_ids), 60,
                'due retries cast after a refused reload')
    _wait_until_quiet(counter)
    assert daemon.process.poll() is None
    assert 'period 0s' not in daemon.log()
    assert daemon.stop(GRACEFUL_SHUTDOWN_TIMEOUT) == 0
    _assert_exactly_once(counter, all_ids, _remaining(sqlite_database))
    assert _remaining(sqlite_database) == set()


@pytest.mark.parametrize('to', ['master', 'group'])
def test_sigterm_mid_pass_stops_cleanly(tmp_path, sqlite_url, sqlite_database,
                                        transport_url, topic, counter,
                                        retry_daemon, to):
    """SIGTERM as KillMode=mixed (master) or control-group (group) sends it."""
    all_ids = counting.add_due_retries(sqlite_database, 3000)
    config = _config(tmp_path, sqlite_url, transport_url, topic,
                     schedule_period_seconds=1, batch_size=50,
                     cast_concurrency=1, rows_per_cast=1)
    daemon = retry_daemon(config)
    _wait_until(lambda: counter.total() >= 100, 60, 'the pass under way')

    signalled_at = time.monotonic()
    if to == 'master':
        os.kill(daemon.process.pid, signal.SIGTERM)
    else:
        daemon.signal(signal.SIGTERM)
    assert daemon.process.wait(GRACEFUL_SHUTDOWN_TIMEOUT + 5) == 0
    assert time.monotonic() - signalled_at < GRACEFUL_SHUTDOWN_TIMEOUT
    remaining = _remaining(sqlite_database)
    # Every deleted row was cast before the daemon exited: its casts are
    # waited for (a busy machine delays them), then any duplicate.
    _wait_until(lambda: counter.total() >= len(all_ids - remaining), 60,
                'the casts of the rows deleted')
    _wait_until_quiet(counter)

    assert remaining, 'the pass ended before SIGTERM: nothing was tested'
    _assert_exactly_once(counter, all_ids, remaining)
    assert _lock(sqlite_database) is None
    assert 'Retry scheduler stopped' in daemon.log()


def _notify_socket(tmp_path, monkeypatch):
    path = str(tmp_path / 'notify')
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    sock.settimeout(30)
    monkeypatch.setenv('NOTIFY_SOCKET', path)
    return sock


def test_daemon_tells_systemd_it_is_ready(tmp_path, sqlite_url,
                                          sqlite_database, transport_url,
                                          topic, retry_daemon, monkeypatch):
    """What Type=notify in etc/systemd/*.service relies on."""
    sock = _notify_socket(tmp_path, monkeypatch)
    config = _config(tmp_path, sqlite_url, transport_url, topic,
                     schedule_period_seconds=3600)
    with sock:
        daemon = retry_daemon(config)
        assert sock.recv(4096) == b'READY=1'
    daemon.wait_for_log('Retry scheduler started')
    assert daemon.stop(GRACEFUL_SHUTDOWN_TIMEOUT) == 0


def test_invalid_config_exits_without_telling_systemd_ready(
        tmp_path, sqlite_url, topic, retry_daemon, monkeypatch):
    sock = _notify_socket(tmp_path, monkeypatch)
    sock.settimeout(0)
    # Refused before anything connects: no broker needed.
    config = _config(tmp_path, sqlite_url, 'rabbit://unused:5672/', topic,
                     schedule_period_seconds=0)
    with sock:
        daemon = retry_daemon(config)
        assert daemon.process.wait(60) != 0
        with pytest.raises(BlockingIOError):
            sock.recv(4096)
    assert 'schedule_period_seconds' in daemon.log()
