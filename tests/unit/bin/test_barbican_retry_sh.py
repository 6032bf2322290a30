"""bin/barbican-retry.sh execs the console script with the config file.

A stub ``barbican-retry`` first on PATH prints its PID and arguments, one
per line. The wrapper must ``exec`` it (same PID as the process started,
so that systemd's SIGTERM and SIGHUP reach the daemon, not a shell) and
pass ``--config-file $BARBICAN_RETRY_CONFIG``.
"""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
WRAPPER = ROOT / 'bin' / 'barbican-retry.sh'

_STUB = '''#!/bin/sh
echo "$$"
for arg in "$@"; do
    echo "$arg"
done
'''


@pytest.fixture
def stub_path(tmp_path):
    """A PATH whose first directory holds the stub console script."""
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    stub = bin_dir / 'barbican-retry'
    stub.write_text(_STUB)
    stub.chmod(0o755)
    return '%s%s%s' % (bin_dir, os.pathsep, os.environ.get('PATH', ''))


def _run_wrapper(path, config=None, args=()):
    env = {'PATH': path}
    if config is not None:
        env['BARBICAN_RETRY_CONFIG'] = config
    # The wrapper is run as systemd runs it: directly, by its shebang.
    process = subprocess.Popen([str(WRAPPER)] + list(args), env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    lines = out.splitlines()
    return process.pid, int(lines[0]), lines[1:]


def test_wrapper_is_executable():
    assert os.access(WRAPPER, os.X_OK)


def test_wrapper_execs_the_console_script_with_the_config(stub_path,
                                                          tmp_path):
    config = str(tmp_path / 'a dir' / 'barbican-retry.conf')
    popen_pid, stub_pid, args = _run_wrapper(stub_path, config)
    assert stub_pid == popen_pid, 'the wrapper forked instead of exec'
    assert args == ['--config-file', config]


def test_wrapper_defaults_to_the_packaged_config(stub_path):
    popen_pid, stub_pid, args = _run_wrapper(stub_path)
    assert stub_pid == popen_pid
    assert args == ['--config-file', '/etc/barbican-retry/barbican-retry.conf']


def test_wrapper_passes_further_arguments_through(stub_path, tmp_path):
    config = str(tmp_path / 'barbican-retry.conf')
    _, _, args = _run_wrapper(stub_path, config,
                              ['--config-dir', '/etc/barbican-retry/conf.d'])
    assert args == ['--config-file', config,
                    '--config-dir', '/etc/barbican-retry/conf.d']
