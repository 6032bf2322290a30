"""Installations of the job systems the benchmark measures itself against.

A peer never enters the project's virtualenv: on first use it is
installed into one of its own under ``~/.cache/barbican-retry-bench`` (a
virtualenv, or for a Node.js peer a directory of npm packages), and
everything it does runs as subprocesses of that interpreter.
"""

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys


def ensure_venv(name, module, version, requirements, variable, log):
    """Create the peer's virtualenv unless it has ``module`` at
    ``version`` already.

    :param requirements: what to ``pip install`` into it.
    :param variable: an environment variable that overrides its path.
    :returns: the path of its ``python``.
    """
    path = pathlib.Path(os.environ.get(variable) or os.path.expanduser(
        '~/.cache/barbican-retry-bench/%s-venv' % name))
    python = path / 'bin' / 'python'
    check = [str(python), '-c',
             'import importlib.metadata as m, sys; '
             'sys.exit(m.version(%r) != %r)' % (module, version)]
    if python.exists() and subprocess.run(
            check, capture_output=True).returncode == 0:
        return python
    log('%s: installing %s into %s', name, ' '.join(requirements), path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # sys.executable is the project's venv; venv builds from its base.
    subprocess.run([sys.executable, '-m', 'venv', '--clear', str(path)],
                   check=True)
    installed = subprocess.run(
        [str(python), '-m', 'pip', 'install', '-q'] + list(requirements),
        capture_output=True, text=True)
    if installed.returncode:
        raise RuntimeError('could not install %s:\n%s%s'
                           % (name, installed.stdout, installed.stderr))
    return python


def ensure_npm(name, package, version, variable, log):
    """Install the npm ``package`` at ``version`` into a directory of the
    benchmark's unless it is there already; Debian's ``nodejs`` and
    ``npm`` first (apt-get, as root or through sudo) when missing.

    :param variable: an environment variable that overrides the
        directory, ``~/.cache/barbican-retry-bench/NAME`` by default.
    :returns: the directory (its ``node_modules`` holds the package).
    """
    path = pathlib.Path(os.environ.get(variable) or os.path.expanduser(
        '~/.cache/barbican-retry-bench/%s' % name))
    installed = path / 'node_modules' / package / 'package.json'
    if installed.exists() and json.loads(
            installed.read_text()).get('version') == version:
        return path
    _ensure_node(log)
    log('%s: installing %s@%s into %s', name, package, version, path)
    path.mkdir(parents=True, exist_ok=True)
    # A package.json of its own, so npm installs here and not in a
    # parent directory's project.
    (path / 'package.json').write_text(json.dumps(
        {'name': 'brbench-%s' % name, 'private': True}))
    done = subprocess.run(
        ['npm', 'install', '--no-audit', '--no-fund', '--save-exact',
         '%s@%s' % (package, version)], cwd=str(path), capture_output=True,
        text=True)
    if done.returncode:
        raise RuntimeError('could not install %s:\n%s%s'
                           % (package, done.stdout, done.stderr))
    return path


def _ensure_node(log):
    if shutil.which('node') and shutil.which('npm'):
        return
    log('installing Debian\'s nodejs and npm')
    command = ['apt-get', 'install', '-y', '--no-install-recommends',
               'nodejs', 'npm']
    if os.geteuid() != 0:
        command = ['sudo'] + command
    subprocess.run(command, check=True, capture_output=True,
                   env=dict(os.environ, DEBIAN_FRONTEND='noninteractive'))


def stop(process):
    """Stop a peer's process started in a session of its own, and all its
    children: SIGTERM, SIGKILL after 10 s."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(10)
    except ProcessLookupError:
        pass
