"""Casts from an ``OrderAPI`` on a ``ConfigOpts`` of its own, with the
lowest and the highest oslo.messaging that requirements.txt allows.

oslo.messaging registers some options on the global ``cfg.CONF`` only
(``[oslo_messaging_metrics]`` from 14.x, ``[oslo_messaging_tracing]``
from 18.x) and reads them from the transport's ``ConfigOpts`` at every
cast; ``worker.rpc.get_transport`` registers them on any. Each version
is installed (without its dependencies, the virtualenv's serve) into a
directory of its own under the virtualenv, kept for the next run; only
the versions of the current bounds are kept. A script run with that
directory first on its path builds the API from a private ConfigOpts on
``fake://`` and SQLite, runs a worker and a retry daemon beside it
(``worker.local``), and waits for an order: its first step must run
within seconds, not after the retry daemon's dispatch deadline (300 s).
"""

import os
import pathlib
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.functional import processes

ROOT = pathlib.Path(processes.REPO_ROOT)
#: Where the versions are installed: beside the virtualenv's own
#: packages, so that a new virtualenv starts anew.
CACHE = pathlib.Path(sys.prefix) / 'barbican-retry-test-libraries'

_BOUNDS = re.compile(r'^oslo\.messaging>=([\d.]+),<([\d.]+)\s*$', re.M)

_SCRIPT = textwrap.dedent('''
    import importlib.metadata
    import sys

    from oslo_config import cfg

    from worker import api
    from worker import local

    print(importlib.metadata.version('oslo.messaging'))
    conf = cfg.ConfigOpts()
    conf(['--config-file', sys.argv[1]], project='barbican-retry')
    orders = api.OrderAPI.from_config(conf)
    with local.serve(orders, upgrade_database=True):
        order = orders.create('certificate', {}, project_id='versions')
        done = orders.wait(order.id, timeout=120, project_id='versions')
        first = min(run.started_at for run in orders.history(
            order.id, project_id='versions'))
    orders.close()
    print(done.status, (first - done.created_at).total_seconds())
''')


def _bounds():
    """``(lowest, below)`` of oslo.messaging in requirements.txt."""
    found = _BOUNDS.search((ROOT / 'requirements.txt').read_text())
    assert found, 'requirements.txt has no oslo.messaging>=X,<Y line'
    return found.groups()


def _specs():
    lowest, below = _bounds()
    return {'lowest': 'oslo.messaging==%s' % lowest,
            'highest': 'oslo.messaging>=%s,<%s' % (lowest, below)}


def _directory(spec):
    """The cache directory's name for ``spec``: letters, digits, dots."""
    return re.sub(r'[^\w.]+', '_', spec.replace('<', 'lt').replace(
        '>=', 'ge').replace('==', '-'))


def _installed(spec):
    """The directory holding oslo.messaging ``spec``, installed once."""
    CACHE.mkdir(exist_ok=True)
    target = CACHE / _directory(spec)
    if not (target / 'oslo_messaging').is_dir():
        partial = pathlib.Path(str(target) + '.new')
        shutil.rmtree(partial, ignore_errors=True)
        subprocess.run([sys.executable, '-m', 'pip', 'install', '-q',
                        '--no-deps', '--target', str(partial), spec],
                       check=True, timeout=300, capture_output=True)
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
    # Bounded: the versions of earlier bounds go.
    current = {_directory(other) for other in _specs().values()}
    for entry in CACHE.iterdir():
        if entry.name not in current and not entry.name.endswith('.new'):
            shutil.rmtree(entry, ignore_errors=True)
    return target


@pytest.mark.parametrize('which', ['lowest', 'highest'])
def test_an_api_on_its_own_configopts_casts(which, tmp_path):
    spec = _specs()[which]
    target = _installed(spec)
    config = tmp_path / 'barbican-retry.conf'
    processes.write_config(
        config, 'sqlite:///%s' % (tmp_path / 'versions.sqlite'), 'fake://',
        'versions', {'simple_certificate':
                     {'delay_before_update_seconds': 0}})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(target), str(ROOT)]))
    done = subprocess.run([sys.executable, '-c', _SCRIPT, str(config)],
                          capture_output=True, text=True, timeout=300,
                          cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert 'could not be cast' not in done.stderr, done.stderr[-3000:]
    version, result = done.stdout.splitlines()[:2]
    if which == 'lowest':
        assert spec == 'oslo.messaging==%s' % version
    else:
        assert version.split('.')[0] == str(int(_bounds()[1]) - 1), (
            'the highest oslo.messaging below %s is %s' % (_bounds()[1],
                                                           version))
    status, delay = result.split()
    assert status == 'ACTIVE'
    assert float(delay) < 10, (
        'with oslo.messaging %s the first step ran %s s after the order '
        'was created: its cast failed' % (version, delay))
