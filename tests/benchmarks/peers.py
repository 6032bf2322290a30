"""Virtualenvs of the job systems the benchmark measures itself against.

A peer never enters the project's virtualenv: on first use it is
installed into one of its own under ``~/.cache/barbican-retry-bench``, and
everything it does runs as subprocesses of that interpreter.
"""

import os
import pathlib
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
