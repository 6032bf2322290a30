"""The systemd units in etc/systemd/: what a packager ships, verified.

The units are parsed by a small parser that keeps repeated keys (systemd
accumulates ``After=``, ``SystemCallFilter=``...); ``systemd-analyze
verify`` checks them too when it is installed.
"""

import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]
UNITS = ROOT / 'etc' / 'systemd'
SAMPLE = ROOT / 'etc' / 'barbican-retry' / 'barbican-retry.conf.sample'
SYSUSERS = UNITS / 'sysusers.d' / 'barbican-retry.conf'
STATE_DIR = '/var/lib/barbican-retry'
CONFIG = '/etc/barbican-retry/barbican-retry.conf'

UNIT_NAMES = ('barbican-retry.service', 'barbican-worker.service',
              'barbican-retry-keystone-listener.service')
#: The REST API's unit: gunicorn's master, which does not notify systemd.
API_UNIT = 'barbican-retry-api.service'

HARDENING = {
    'NoNewPrivileges': 'yes',
    'ProtectSystem': 'strict',
    'ProtectHome': 'yes',
    'PrivateTmp': 'yes',
    'PrivateDevices': 'yes',
    'ProtectKernelTunables': 'yes',
    'ProtectKernelModules': 'yes',
    'ProtectControlGroups': 'yes',
    'RestrictSUIDSGID': 'yes',
    'LockPersonality': 'yes',
    'RestrictRealtime': 'yes',
    'RestrictNamespaces': 'yes',
    'SystemCallArchitectures': 'native',
    # Empty: no capability at all, even if the binary asked for one.
    'CapabilityBoundingSet': '',
}


def parse_unit(path):
    """Return {section: {key: [values in order]}} of a unit file."""
    sections, section = {}, None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith(('#', ';')):
            continue
        assert not line.endswith('\\'), (
            '%s:%d: no continuation lines, please' % (path.name, number))
        if line.startswith('[') and line.endswith(']'):
            section = sections.setdefault(line[1:-1], {})
            continue
        assert section is not None and '=' in line, (
            '%s:%d: not a key=value line in a section' % (path.name, number))
        key, _, value = line.partition('=')
        section.setdefault(key.strip(), []).append(value.strip())
    return sections


def _last(section, key):
    assert key in section, '%s= is missing' % key
    return section[key][-1]


def _seconds(value):
    match = re.fullmatch(r'(\d+)(s|min)?', value)
    assert match, 'use plain seconds or Nmin: %r' % value
    return int(match.group(1)) * (60 if match.group(2) == 'min' else 1)


def _sample_default(name):
    """The commented default of a [DEFAULT] option in the sample config."""
    match = re.search(r'(?m)^#%s = (\S+)$' % re.escape(name),
                      SAMPLE.read_text())
    assert match, '%s not in %s' % (name, SAMPLE.name)
    return match.group(1)


@pytest.fixture(params=UNIT_NAMES)
def unit(request):
    """(name, parsed unit) for each unit shipped."""
    return request.param, parse_unit(UNITS / request.param)


def test_every_unit_is_shipped():
    assert sorted(p.name for p in UNITS.glob('*.service')) == \
        sorted(UNIT_NAMES + (API_UNIT,))


def test_api_unit_runs_gunicorn_hardened_as_the_daemons():
    sections = parse_unit(UNITS / API_UNIT)
    service = sections['Service']
    assert _last(service, 'ExecStart').split() == [
        '/usr/bin/barbican-retry-api', '--config-file', CONFIG]
    assert re.search(r'(?m)^\s*barbican-retry-api = worker\.rest\.wsgi:main$',
                     (ROOT / 'setup.cfg').read_text())
    # gunicorn's master: SIGHUP reloads the workers, SIGTERM stops them
    # gracefully; SIGKILL on timeout reaches the whole cgroup.
    assert _last(service, 'ExecReload') == '/bin/kill -HUP $MAINPID'
    assert _last(service, 'KillMode') == 'mixed'
    assert _last(service, 'Restart') == 'on-failure'
    for key in ('User', 'Group', 'StateDirectory', 'LogsDirectory'):
        assert _last(service, key) == 'barbican-retry', key
    wrong = {key: service.get(key) for key, value in HARDENING.items()
             if service.get(key, [None])[-1] != value}
    assert wrong == {}
    assert sections['Install']['WantedBy'] == ['multi-user.target']


def test_retry_unit_starts_the_wrapper_with_the_config():
    service = parse_unit(UNITS / 'barbican-retry.service')['Service']
    exec_start = _last(service, 'ExecStart').split()
    # The repository's wrapper, installed in /usr/bin.
    assert exec_start == ['/usr/bin/barbican-retry.sh']
    assert (ROOT / 'bin' / 'barbican-retry.sh').exists()
    assert 'BARBICAN_RETRY_CONFIG=%s' % CONFIG in service['Environment']


def test_worker_unit_starts_the_console_script_with_the_config():
    service = parse_unit(UNITS / 'barbican-worker.service')['Service']
    exec_start = _last(service, 'ExecStart').split()
    assert exec_start == ['/usr/bin/barbican-worker', '--config-file', CONFIG]
    setup_cfg = (ROOT / 'setup.cfg').read_text()
    assert re.search(r'(?m)^\s*barbican-worker = worker\.cmd\.worker:main$',
                     setup_cfg)


def test_keystone_listener_unit_starts_the_console_script_with_the_config():
    service = parse_unit(
        UNITS / 'barbican-retry-keystone-listener.service')['Service']
    exec_start = _last(service, 'ExecStart').split()
    assert exec_start == ['/usr/bin/barbican-retry-keystone-listener',
                          '--config-file', CONFIG]
    setup_cfg = (ROOT / 'setup.cfg').read_text()
    assert re.search(r'(?m)^\s*barbican-retry-keystone-listener = '
                     r'worker\.cmd\.keystone_listener:main$', setup_cfg)


def test_lifecycle(unit):
    name, sections = unit
    service = sections['Service']
    # The main process sends READY=1 (see test_signals for the proof on a
    # real process): cotyledon's master for the worker, the daemon itself
    # for barbican-retry; it is the main PID since the wrapper execs.
    assert _last(service, 'Type') == 'notify'
    assert _last(service, 'NotifyAccess') == 'main'
    assert _last(service, 'ExecReload') == '/bin/kill -HUP $MAINPID'
    # The main process stops gracefully (the worker's master forwards
    # SIGTERM to its children); SIGKILL on timeout must still reach the
    # whole cgroup.
    assert _last(service, 'KillMode') == 'mixed'
    assert _last(service, 'Restart') == 'on-failure'
    assert _seconds(_last(service, 'RestartSec')) > 0
    graceful = int(_sample_default('graceful_shutdown_timeout'))
    assert _seconds(_last(service, 'TimeoutStopSec')) > graceful, (
        '%s: TimeoutStopSec must exceed graceful_shutdown_timeout (%ds), '
        'or systemd SIGKILLs the daemon before it has stopped cleanly'
        % (name, graceful))
    assert sections['Install']['WantedBy'] == ['multi-user.target']


def test_user_and_directories(unit):
    _, sections = unit
    service = sections['Service']
    assert _last(service, 'User') == 'barbican-retry'
    assert _last(service, 'Group') == 'barbican-retry'
    assert _last(service, 'StateDirectory') == 'barbican-retry'
    assert _last(service, 'LogsDirectory') == 'barbican-retry'
    # The default SQLite URL is relative: it lands in the state directory.
    assert _last(service, 'WorkingDirectory') == STATE_DIR
    read_write = ' '.join(service.get('ReadWritePaths', [])).split()
    assert STATE_DIR in read_write


def test_sysusers_creates_the_units_user():
    entries = [line.split() for line in SYSUSERS.read_text().splitlines()
               if line.strip() and not line.startswith('#')]
    assert [entry[:2] for entry in entries] == [['u', 'barbican-retry']]
    assert entries[0][-1] == STATE_DIR


def test_hardening(unit):
    name, sections = unit
    service = sections['Service']
    wrong = {key: service.get(key) for key, value in HARDENING.items()
             if service.get(key, [None])[-1] != value}
    assert wrong == {}, '%s: hardening keys missing or different: %s' % (
        name, wrong)


def test_units_differ_only_where_they_must():
    retry, worker, _ = (parse_unit(UNITS / name) for name in UNIT_NAMES)
    for section in ('Unit', 'Service', 'Install'):
        differing = sorted(
            key for key in set(retry[section]) | set(worker[section])
            if retry[section].get(key) != worker[section].get(key))
        expected = {'Unit': ['Description'],
                    'Service': ['Environment', 'ExecStart'],
                    'Install': []}[section]
        assert differing == expected, section


def test_the_listener_unit_is_the_worker_unit_but_its_name():
    worker, listener = (parse_unit(UNITS / name) for name in UNIT_NAMES[1:])
    for section in ('Unit', 'Service', 'Install'):
        differing = sorted(
            key for key in set(worker[section]) | set(listener[section])
            if worker[section].get(key) != listener[section].get(key))
        expected = {'Unit': ['Description'], 'Service': ['ExecStart'],
                    'Install': []}[section]
        assert differing == expected, section


def test_systemd_analyze_verify(tmp_path):
    analyze = shutil.which('systemd-analyze')
    if analyze is None:
        pytest.skip('systemd-analyze is not installed: only this check of '
                    'the units is skipped')
    # verify checks that ExecStart= is executable: point it at stubs.
    stubs = tmp_path / 'bin'
    stubs.mkdir()
    for name in ('barbican-retry.sh', 'barbican-worker',
                 'barbican-retry-keystone-listener'):
        stub = stubs / name
        stub.write_text('#!/bin/sh\n')
        stub.chmod(0o755)
    paths = []
    for name in UNIT_NAMES:
        copy = tmp_path / name
        copy.write_text((UNITS / name).read_text().replace(
            '/usr/bin/', '%s/' % stubs))
        paths.append(str(copy))
    result = subprocess.run([analyze, 'verify'] + paths,
                            capture_output=True, text=True, timeout=120)
    # Unknown keys and bad values are only warnings (exit status 0).
    assert (result.returncode, result.stdout + result.stderr) == (0, '')
