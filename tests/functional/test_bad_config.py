"""A bad configuration stops barbican-retry at start, naming the option;
a daemon that cannot start exits non-zero instead of running on."""

import os
import signal
import subprocess

import pytest

from tests.functional import processes
from worker.db import migration
from worker.db import session as db_session


def _start(tmp_path, scheduler_options, group='scheduler'):
    config = tmp_path / 'bad.conf'
    processes.write_config(
        config, 'sqlite:///%s' % (tmp_path / 'x.sqlite'), 'fake://',
        'unused', {group: scheduler_options})
    return subprocess.run(
        [os.path.join(processes.BIN_DIR, 'barbican-retry'),
         '--config-file', str(config)],
        capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize('value', ['0', 'abc', '-5'])
def test_invalid_period_stops_the_daemon(tmp_path, value):
    result = _start(tmp_path, {'schedule_period_seconds': value})
    assert result.returncode != 0
    assert 'schedule_period_seconds' in result.stderr


def test_lock_timeout_shorter_than_a_pass_stops_the_daemon(tmp_path):
    result = _start(tmp_path, {'retry_lock_timeout_seconds': '30',
                               'max_pass_seconds': '60'})
    assert result.returncode != 0
    assert 'retry_lock_timeout_seconds' in result.stderr


@pytest.mark.parametrize('name', ['retention_days', 'purge_interval_seconds'])
def test_negative_retention_stops_the_daemon(tmp_path, name):
    result = _start(tmp_path, {name: '-1'}, group='database')
    assert result.returncode != 0
    assert name in result.stderr


@pytest.mark.parametrize('name, value', [('sample_ratio', '1.5'),
                                         ('sample_ratio', '-0.1'),
                                         ('otlp_endpoint', 'ftp://h/v1'),
                                         ('export_timeout_seconds', '0')])
def test_invalid_tracing_option_stops_the_daemon(tmp_path, name, value):
    result = _start(tmp_path, {'enabled': 'true', name: value},
                    group='tracing')
    assert result.returncode != 0
    assert name in result.stderr


# What a daemon that cannot start must do: exit non-zero, on its own,
# within this bound (issue 42), with the signal it may get meanwhile too.
_START_FAILURE_BOUND = 30


def _config(tmp_path, transport_url='fake://', database=None, options=None):
    config = tmp_path / 'daemon.conf'
    if database is None:
        database = 'sqlite:///%s' % (tmp_path / 'absent.sqlite')
    return processes.write_config(config, database, transport_url, 'unused',
                                  options)


def _run(script, config, timeout=_START_FAILURE_BOUND, env=None):
    """Run ``script``; fail unless it exits within ``timeout`` seconds."""
    process = subprocess.Popen(
        [os.path.join(processes.BIN_DIR, script), '--config-file',
         str(config)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True, env=env)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail('%s still ran after %ds:\n%s'
                    % (script, timeout, output[-3000:]))
    return process.returncode, output


@pytest.fixture
def migrated_sqlite(tmp_path):
    """The URL of a SQLite file at this code's schema."""
    url = 'sqlite:///%s' % (tmp_path / 'migrated.sqlite')
    database = db_session.Database.from_url(url)
    migration.upgrade(database.engine)
    database.dispose()
    return url


@pytest.mark.parametrize('script', ['barbican-retry', 'barbican-worker'])
def test_a_daemon_with_a_transport_it_cannot_load_exits_1(
        tmp_path, migrated_sqlite, script):
    config = _config(tmp_path, 'nosuch://host/', migrated_sqlite,
                     {'worker': {'workers': 2}})
    status, output = _run(script, config)
    assert status == 1, output[-3000:]
    assert 'nosuch' in output


def test_the_worker_pool_stops_after_max_child_failures(tmp_path,
                                                        migrated_sqlite):
    config = _config(tmp_path, 'nosuch://host/', migrated_sqlite,
                     {'worker': {'workers': 1, 'max_child_failures': 2}})
    status, output = _run('barbican-worker', config)
    assert status == 1, output[-3000:]
    assert '2 worker processes failed within 60s' in output
    assert output.count('exited with status 1') in (2, 3), output[-3000:]


def test_sigterm_stops_a_retry_daemon_that_could_not_start(tmp_path,
                                                           migrated_sqlite):
    """It used to heartbeat on with SIGTERM blocked in every thread."""
    config = _config(tmp_path, 'nosuch://host/', migrated_sqlite)
    daemon = processes.Daemon('barbican-retry', config,
                              tmp_path / 'retry.log').start()
    try:
        daemon.wait_for_log('Could not start', timeout=_START_FAILURE_BOUND)
    except AssertionError:
        # It exited already, as it should: the log says why.
        assert daemon.process.poll() is not None
    daemon.signal(signal.SIGTERM)
    try:
        assert daemon.process.wait(_START_FAILURE_BOUND) != 0
    except subprocess.TimeoutExpired:
        # Not left behind: a daemon that ignores SIGTERM would run on
        # after the suite (seen before the fix, heartbeating for minutes).
        daemon.signal(signal.SIGKILL)
        pytest.fail('barbican-retry ran on %ds after SIGTERM'
                    % _START_FAILURE_BOUND)


@pytest.mark.parametrize('script', ['barbican-retry', 'barbican-worker'])
def test_a_missing_sqlite_file_is_refused_not_created(tmp_path, script):
    config = _config(tmp_path)
    status, output = _run(script, config)
    assert status == 1
    assert 'does not exist (missing or not upgraded)' in output
    assert 'barbican-retry-manage --config-file %s db upgrade' % config \
        in output
    assert not (tmp_path / 'absent.sqlite').exists()


def test_a_database_without_schema_is_refused(tmp_path):
    (tmp_path / 'empty.sqlite').touch()
    config = _config(tmp_path, database='sqlite:///%s'
                     % (tmp_path / 'empty.sqlite'))
    status, output = _run('barbican-retry', config)
    assert status == 1
    assert 'has no schema (missing or not upgraded)' in output
    assert 'db upgrade' in output


def test_unknown_sections_are_named_at_start(tmp_path, migrated_sqlite):
    config = _config(tmp_path, database=migrated_sqlite, options={
        'step:nosuch.step': {'max_attempts': 3},
        'step:certificate.nosuch_step': {'max_attempts': 3},
        'order_type:certficate': {'max_pending': 3},
        'resource:ca:letsencrypt': {'capacity': 2},
        'step:certificate.process_type_order': {'max_attempts': 3},
        'resource:ca': {'capacity': 2}})
    daemon = processes.Daemon('barbican-retry', config,
                              tmp_path / 'retry.log').start()
    try:
        daemon.wait_for_log('Retry scheduler started')
        warned = [line for line in daemon.log().splitlines()
                  if 'WARNING' in line and 'is ignored' in line]
    finally:
        assert daemon.stop() == 0
    assert sorted(line.split('Section [')[1].split(']')[0]
                  for line in warned) == [
        'order_type:certficate', 'resource:ca:letsencrypt',
        'step:certificate.nosuch_step', 'step:nosuch.step']


@pytest.mark.parametrize('content', [
    '{"DEFAULT": {"transport_url": "fake://"}}\n',
    'transport_url: fake://\ndatabase:\n  connection: sqlite://\n',
    b'\x7fELF\x02\x01\x01\x00\xd0\xff'])
def test_a_file_that_is_not_ini_is_one_line_of_error(tmp_path, content):
    config = tmp_path / 'not-ini.conf'
    if isinstance(content, bytes):
        config.write_bytes(content)
    else:
        config.write_text(content)
    status, output = _run('barbican-retry', config)
    assert status == 1
    assert output.splitlines() == [output.strip()], output
    assert output.startswith('barbican-retry: cannot read the '
                             'configuration: ')
    assert 'expected an INI file' in output


@pytest.mark.parametrize('url, module, extra', [
    ('mysql+pymysql://u:secret@127.0.0.1:1/db', 'pymysql', 'mysql'),
    ('postgresql+psycopg2://u:secret@127.0.0.1:1/db', 'psycopg2',
     'postgresql')])
def test_a_missing_database_driver_names_its_extra(tmp_path, url, module,
                                                   extra):
    status, output = _run('barbican-retry', _config(tmp_path, database=url),
                          env=_hiding(tmp_path, module))
    assert status == 1
    assert "pip install 'barbican-retry[%s]'" % extra in output
    assert 'secret' not in output
    assert 'Traceback' not in output


def test_tracing_on_without_its_packages_stops_naming_option_and_extra(
        tmp_path, migrated_sqlite):
    config = _config(tmp_path, database=migrated_sqlite,
                     options={'tracing': {'enabled': 'true'}})
    status, output = _run('barbican-retry', config,
                          env=_hiding(tmp_path, 'opentelemetry'))
    assert status == 1
    assert '[tracing] enabled' in output
    assert "pip install 'barbican-retry[tracing]'" in output


def _hiding(tmp_path, package):
    """An environment in which ``import package`` fails, as if it were
    not installed: a package of that name first on the path raises."""
    hidden = tmp_path / 'hidden'
    (hidden / package).mkdir(parents=True)
    (hidden / package / '__init__.py').write_text(
        'raise ImportError("No module named %r", name=%r)\n'
        % (package, package))
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(hidden), processes.REPO_ROOT]))


def test_a_database_server_down_at_start_is_waited_for(tmp_path):
    """Unreachable is no refusal: the daemon starts and waits for the
    server as for any outage (a refusal would need a schema to read)."""
    config = _config(tmp_path, database='mysql+pymysql://u:p@127.0.0.1:1/x',
                     options={'database': {'max_retries': 0}})
    daemon = processes.Daemon('barbican-retry', config,
                              tmp_path / 'retry.log').start()
    try:
        daemon.wait_for_log('Could not read the schema revision')
        daemon.wait_for_log('Retry scheduler started')
    finally:
        assert daemon.stop() == 0


def test_the_check_of_a_database_server_down_at_start_tries_once(tmp_path):
    """Only the daemon's own engine waits out ``[database] max_retries``
    (oslo.db's "SQL connection failed" lines); the check before it tries
    one connection, not as many again."""
    config = _config(tmp_path, database='mysql+pymysql://u:p@127.0.0.1:1/x',
                     options={'database': {'max_retries': 2,
                                           'retry_interval': 1}})
    daemon = processes.Daemon('barbican-retry', config,
                              tmp_path / 'retry.log').start()
    try:
        # Its own engine gives up: start() raises, and it exits.
        daemon.process.wait(_START_FAILURE_BOUND)
    finally:
        daemon.stop()
    log = daemon.log()
    checked = log.index('Could not read the schema revision')
    assert 'SQL connection failed' not in log[:checked]
    assert log.count('SQL connection failed') == 2
