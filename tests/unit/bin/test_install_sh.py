"""bin/lib/install.sh: the editable install that bin/demo.sh and
bin/run-tests.sh share, skipped when nothing it depends on changed.

A stub ``python3`` first on PATH makes the "virtualenv": its
``bin/python`` records each call (one line of arguments) and fails when
told to. The checkout is a temporary directory with the files an install
depends on.
"""

import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
LIBRARY = ROOT / 'bin' / 'lib' / 'install.sh'

# The virtualenv's python: records its arguments, exits with $PIP_RC.
_VENV_PYTHON = '''#!/bin/sh
echo "$*" >>"%(log)s"
exit "${PIP_RC:-0}"
'''

# python3 -m venv DIR: makes DIR/bin/python the recording stub.
_PYTHON3 = '''#!/bin/sh
echo "python3 $*" >>"%(log)s"
mkdir -p "$3/bin"
cp "%(venv_python)s" "$3/bin/python"
'''


@pytest.fixture
def checkout(tmp_path):
    """A checkout with setup.cfg and requirements, and a PATH of stubs."""
    top = tmp_path / 'checkout'
    top.mkdir()
    for name in ('setup.cfg', 'setup.py', 'requirements.txt',
                 'test-requirements.txt'):
        (top / name).write_text('# %s\n' % name)
    stubs = tmp_path / 'stubs'
    stubs.mkdir()
    log = tmp_path / 'calls.log'
    venv_python = stubs / 'venv-python'
    venv_python.write_text(_VENV_PYTHON % {'log': log})
    venv_python.chmod(0o755)
    python3 = stubs / 'python3'
    python3.write_text(_PYTHON3 % {'log': log, 'venv_python': venv_python})
    python3.chmod(0o755)
    path = '%s%s%s' % (stubs, os.pathsep, os.environ.get('PATH', ''))
    return top, path, log


def _install(checkout, *requirements, pip_rc=0, extras=None):
    """Run install_project .venv demo in the checkout; return the calls
    (the lines the stubs recorded by this run) and the exit status."""
    top, path, log = checkout
    before = log.read_text().splitlines() if log.exists() else []
    env = {'PATH': path, 'PIP_RC': str(pip_rc)}
    if extras is not None:
        env['INSTALL_EXTRAS'] = extras
    result = subprocess.run(
        ['bash', '-c', 'set -euo pipefail; . "$0"; '
         'install_project .venv demo "$@"', str(LIBRARY)] +
        list(requirements),
        cwd=top, env=env, capture_output=True, text=True, timeout=30)
    calls = log.read_text().splitlines()[len(before):] \
        if log.exists() else []
    return calls, result


def test_the_first_run_creates_the_virtualenv_and_installs(checkout):
    calls, result = _install(checkout)

    assert result.returncode == 0, result.stderr
    assert calls == ['python3 -m venv .venv',
                     '-m pip install -q --upgrade pip',
                     '-m pip install -q -e .']
    assert 'installing the project into .venv' in result.stderr


def test_a_second_run_with_nothing_changed_installs_nothing(checkout):
    _install(checkout)
    (checkout[0] / 'worker.py').write_text('# a change of source\n')

    calls, result = _install(checkout)

    assert (calls, result.returncode, result.stderr) == ([], 0, '')


@pytest.mark.parametrize('name', ['setup.cfg', 'requirements.txt',
                                  'pyproject.toml'])
def test_a_change_of_what_it_depends_on_installs_again(checkout, name):
    _install(checkout)
    (checkout[0] / name).write_text('# changed\n')

    calls, _ = _install(checkout)

    assert calls == ['-m pip install -q -e .']


def test_the_requirements_files_given_are_installed_and_watched(checkout):
    calls, _ = _install(checkout, 'test-requirements.txt')
    assert calls[-1] == '-m pip install -q -e . -r test-requirements.txt'
    assert _install(checkout, 'test-requirements.txt')[0] == []

    (checkout[0] / 'test-requirements.txt').write_text('pytest\n')

    assert _install(checkout, 'test-requirements.txt')[0] == [
        '-m pip install -q -e . -r test-requirements.txt']


def test_the_extras_asked_for_are_installed_and_watched(checkout):
    calls, _ = _install(checkout, extras='postgresql,mysql,tracing')
    assert calls[-1] == '-m pip install -q -e .[postgresql,mysql,tracing]'
    assert _install(checkout, extras='postgresql,mysql,tracing')[0] == []

    # Fewer extras: installed again (pip leaves the others; the stamp
    # follows what was asked).
    assert _install(checkout)[0] == ['-m pip install -q -e .']


def test_run_tests_installs_the_extras_its_tests_use():
    text = (ROOT / 'bin' / 'run-tests.sh').read_text()
    assert 'INSTALL_EXTRAS=postgresql,mysql,tracing' in text


def test_a_failed_install_is_tried_again(checkout):
    _install(checkout)
    (checkout[0] / 'setup.cfg').write_text('# a new entry point\n')
    calls, failed = _install(checkout, pip_rc=1)
    assert (calls, failed.returncode) == (['-m pip install -q -e .'], 1)

    calls, result = _install(checkout)

    assert result.returncode == 0
    assert calls == ['-m pip install -q -e .']


def test_demo_and_run_tests_source_it():
    for script in ('demo.sh', 'run-tests.sh'):
        text = (ROOT / 'bin' / script).read_text()
        assert 'bin/lib/install.sh' in text and 'install_project' in text
        assert 'pip install' not in text, script
