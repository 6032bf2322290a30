"""``barbican-retry-manage`` run as a user runs it, in a process of its
own (it configures the global CONF and oslo.log): without a database it
refuses the commands that need one, and runs the others."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[4]


def _manage(tmp_path, *argv):
    """Run it in tmp_path/cwd, where the default SQLite file would go,
    with a configuration file that sets nothing."""
    config = tmp_path / 'empty.conf'
    config.touch()
    (tmp_path / 'cwd').mkdir(exist_ok=True)
    # A HOME of its own too (stevedore keeps a cache there).
    env = dict(os.environ, PYTHONPATH=str(ROOT), HOME=str(tmp_path))
    env.pop('OS_DATABASE__CONNECTION', None)
    return subprocess.run(
        [sys.executable, '-m', 'scheduler.cmd.manage',
         '--config-file', str(config)] + list(argv),
        cwd=tmp_path / 'cwd', env=env, capture_output=True, text=True,
        timeout=60)


def test_a_command_without_connection_exits_1_and_creates_nothing(
        tmp_path):
    result = _manage(tmp_path, 'order', 'show', 'some-id')

    assert result.returncode == 1
    assert result.stderr.startswith(
        'barbican-retry-manage: [database] connection is not set')
    assert '--config-file' in result.stderr
    assert 'no such table' not in result.stderr
    assert result.stdout == ''
    assert os.listdir(tmp_path / 'cwd') == []


def test_commands_without_database_run_without_connection(tmp_path):
    types = _manage(tmp_path, 'order', 'type', 'list', '-f', 'value',
                    '-c', 'name')
    helped = _manage(tmp_path, '--help')

    assert (types.returncode, types.stdout.split()) == (
        0, ['certificate', 'fanout'])
    assert helped.returncode == 0
    assert 'order show' in helped.stdout
    assert os.listdir(tmp_path / 'cwd') == []
