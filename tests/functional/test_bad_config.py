"""A bad configuration stops barbican-retry at start, naming the option."""

import os
import subprocess

import pytest

from tests.functional import processes


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
