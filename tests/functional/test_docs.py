"""Every command the documentation shows is run here.

The ``sh`` blocks of README.md and doc/*.md are the commands a reader
types; each ``barbican-retry-*`` line runs against a live deployment
(``console`` blocks hold what needs root or systemd and is not run).
"""

import json
import os
import pathlib
import re
import shlex
import subprocess

import pytest

from tests.functional import processes
from worker.notifications import sealing

ROOT = pathlib.Path(processes.REPO_ROOT)
DOCUMENTS = [ROOT / 'README.md'] + sorted((ROOT / 'doc').glob('*.md'))
_SH_BLOCK = re.compile(r'^```sh\n(.*?)^```', re.M | re.S)
_PROJECT_COMMANDS = ('barbican-retry-manage', 'barbican-retry-status')
_REPO_SCRIPTS = ('bin/demo.sh', 'bin/run-tests.sh')

pytestmark = pytest.mark.parametrize('backend', ['sqlite'])


def documented_commands():
    """Return every command line of the ``sh`` blocks, comments removed."""
    commands = []
    for document in DOCUMENTS:
        for block in _SH_BLOCK.findall(document.read_text()):
            for line in block.splitlines():
                line = line.split(' #', 1)[0].strip()
                if line and not line.startswith('#'):
                    commands.append((document.name, line))
    return commands


def test_documents_show_only_commands_this_suite_runs(backend):
    for name, line in documented_commands():
        assert line.startswith(_PROJECT_COMMANDS + _REPO_SCRIPTS), \
            '%s: %r is in an sh block but no test runs it' % (name, line)


def _argv(line, config, ids):
    argv = shlex.split(line)
    if '--config-file' in argv:
        argv[argv.index('--config-file') + 1] = config
    else:
        argv[1:1] = ['--config-file', config]
    argv = [ids.get(arg, arg) for arg in argv]
    argv[0] = os.path.join(processes.BIN_DIR, argv[0])
    return argv


def test_every_documented_operator_command_runs(deployment, database,
                                                tmp_path):
    key_file = tmp_path / 'secret-keys'
    key_file.write_text(sealing.generate_key() + '\n')
    cluster = deployment({
        'DEFAULT': {'service_down_time': 3, 'report_interval': 1},
        'scheduler': {'schedule_period_seconds': 1},
        'simple_certificate': {'delay_before_update_seconds': 3600},
        'worker': {'workers': 1},
        'notifications': {'allowed_hosts': 'hooks.example.org',
                          'secret': 'documented',
                          'secret_key_file': key_file}})
    workers = cluster.start('barbican-worker', 'worker')
    retry = cluster.start('barbican-retry', 'retry')
    workers.wait_for_log('serving topic')
    retry.wait_for_log('Retry scheduler started')
    [order] = cluster.manage_json('order', 'create', '--type',
                                  'certificate')
    [task] = _wait_for_retry(cluster)
    # The URL of the documented "order create --callback-url".
    ids = {'ORDER_ID': order['id'], 'TASK_ID': str(task['id']),
           'URL': 'https://hooks.example.org/orders',
           'PROJECT': 'default'}
    # "order cancel" gets an order of its own, so that the commands after
    # it still find the first order's retry row.
    [victim] = cluster.manage_json('order', 'create', '--type',
                                   'certificate')
    # A schedule to show, and one to delete.
    ids['SCHEDULE_ID'], deleted = (cluster.manage_json(
        'schedule', 'create', '--type', 'certificate', '--every', '30d')['id']
        for _ in range(2))
    ran = 0
    for name, line in documented_commands():
        if not line.startswith(_PROJECT_COMMANDS):
            continue
        line_ids = dict(ids, ORDER_ID=victim['id']) if ' cancel ' in line \
            else ids
        if ' schedule delete ' in line:
            line_ids = dict(ids, SCHEDULE_ID=deleted)
        result = subprocess.run(_argv(line, cluster.config, line_ids),
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, (name, line, result.stderr[-2000:])
        ran += 1
    assert ran >= 15


def _wait_for_retry(cluster):
    # Each look is a command, which a busy machine takes seconds to start.
    return processes.wait_for(lambda: cluster.manage_json('retry', 'list'),
                              60, 'a retry row')


def test_demo_script_ends_with_every_order_active(backend, tmp_path):
    env = dict(os.environ,
               BARBICAN_RETRY_VENV=os.path.dirname(processes.BIN_DIR))
    result = subprocess.run(
        [str(ROOT / 'bin' / 'demo.sh'), '--orders', '4',
         '--state-dir', str(tmp_path)],
        capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    lines = result.stdout.strip().splitlines()
    # Four orders of each type it runs: certificate and fanout.
    assert lines[-1] == 'demo: 8 orders ACTIVE, 0 PENDING, 0 ERROR'
    assert any('check_certificate_status RETRYING at' in line
               for line in lines)


def test_the_demo_prints_commands_that_read_its_database(backend, tmp_path):
    result = subprocess.run(
        [os.path.join(processes.BIN_DIR, 'barbican-retry-demo'),
         '--orders', '1', '--delay', '1', '--state-dir',
         str(tmp_path / 'state')],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == ('demo: database {0}/demo.sqlite, configuration '
                        '{0}/demo.conf, log {0}/demo.log'
                        .format(tmp_path / 'state'))
    prefixes = ('demo: list the orders: ', 'demo: look at an order: ')
    commands = [line[len(prefix):] for line in lines
                for prefix in prefixes if line.startswith(prefix)]
    assert len(commands) == 2, lines
    # Run as a user pastes them, from another directory.
    listed, shown = (subprocess.run(shlex.split(command) + ['-f', 'json'],
                                    capture_output=True, text=True,
                                    timeout=120, cwd='/')
                     for command in commands)
    assert listed.returncode == 0, listed.stderr
    assert shown.returncode == 0, shown.stderr
    order = json.loads(shown.stdout)
    assert order['status'] == 'ACTIVE'
    assert order['id'] in [row['id'] for row in json.loads(listed.stdout)]
