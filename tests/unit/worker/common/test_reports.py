"""Setting Guru Meditation Reports up (``worker.common.reports``); the
reports themselves are tested on running daemons
(tests/functional/test_guru_meditation.py)."""

import logging
import os
import signal
import threading

from oslo_config import cfg
import pytest

from tests import config
from worker.common import reports
from worker import conf as worker_conf


@pytest.fixture
def fresh(monkeypatch):
    """No process has installed the reports; SIGUSR2 restored after."""
    monkeypatch.setattr(reports, '_installed_in', None)
    handler = signal.getsignal(signal.SIGUSR2)
    yield
    signal.signal(signal.SIGUSR2, handler)


def test_a_reports_file_is_named_after_the_process_that_writes_it():
    name = reports.ProcessName('barbican-worker')
    # As oslo.reports names the file.
    assert f'{name}_gurumeditation_1' == (
        'barbican-worker.%d_gurumeditation_1' % os.getpid())


def test_the_main_thread_sets_sigusr2_once(fresh):
    conf = config.make_conf()
    reports.install(conf, 'barbican-retry')
    handler = signal.getsignal(signal.SIGUSR2)
    assert callable(handler)
    reports.install(conf, 'barbican-retry')
    assert signal.getsignal(signal.SIGUSR2) is handler


def test_a_pool_process_keeps_the_handler_it_inherited(fresh):
    conf = config.make_conf()
    before = signal.getsignal(signal.SIGUSR2)
    failed = []
    thread = threading.Thread(target=lambda: _install(conf, failed))
    thread.start()
    thread.join()
    assert failed == [] and signal.getsignal(signal.SIGUSR2) is before


def test_a_missing_trigger_file_is_logged_and_the_process_runs_on(
        fresh, tmp_path, caplog):
    conf = config.make_conf()
    conf.set_override('file_event_handler', str(tmp_path / 'missing'),
                      'oslo_reports')
    with caplog.at_level(logging.ERROR):
        reports.install(conf, 'barbican-worker')
    assert 'No Guru Meditation Reports' in caplog.text
    assert 'missing' in caplog.text


def _install(conf, failed):
    try:
        reports.install(conf, 'barbican-worker')
    except Exception as exc:
        failed.append(exc)


def test_the_configuration_registers_the_reports_options():
    # install reads them and registers nothing: worker.conf does, with
    # every other group the daemons read.
    conf = cfg.ConfigOpts()
    worker_conf.register_opts(conf)
    conf([], project='barbican-retry')
    assert conf.oslo_reports.file_event_handler is None
    assert conf.oslo_reports.file_event_handler_interval == 1
