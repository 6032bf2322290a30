"""The check before a daemon starts (worker.db.readiness) on a database
server that is down: one connection tried, and the daemon starts."""

import socket

import psycopg2
import pymysql
import pytest

from tests import config
from worker.db import readiness


def _closed_port():
    """A port of 127.0.0.1 that nothing listens on: connections to it are
    refused at once."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize('scheme, driver', [
    ('postgresql+psycopg2', psycopg2), ('mysql+pymysql', pymysql)])
def test_a_server_down_at_boot_is_tried_once_and_the_daemon_starts(
        monkeypatch, caplog, scheme, driver):
    attempts = []
    connect = driver.connect

    def counted(*args, **kwargs):
        attempts.append(kwargs)
        return connect(*args, **kwargs)
    monkeypatch.setattr(driver, 'connect', counted)
    conf = config.make_conf(**{
        'database.connection': '%s://u:secret@127.0.0.1:%d/x' % (
            scheme, _closed_port()),
        # oslo.db would try this many times before the check read
        # anything (retry_interval 0: the test waits for nothing).
        'database.max_retries': 3, 'database.retry_interval': 0})

    # Returns: no SystemExit, the daemon starts.
    readiness.check(conf, 'barbican-worker')

    assert len(attempts) == 1
    assert int(attempts[0]['connect_timeout']) == readiness.CONNECT_TIMEOUT
    assert 'starting anyway' in caplog.text
    assert 'secret' not in caplog.text


def test_a_connect_timeout_of_the_url_is_kept():
    url = 'postgresql+psycopg2://u@db/x?connect_timeout=30'
    assert readiness._engine_options(url) == {'max_retries': 0}
    assert readiness._engine_options('sqlite:///x.db') == {
        'max_retries': 0}
