"""The oslo.service and oslo.config behaviour refuse_invalid_reloads() uses.

``worker.conf.refuse_invalid_reloads()`` replaces the instance attribute
``conf.mutate_config_files`` of the ConfigOpts with a function that checks
the new files first. That works only as long as:

- oslo.config lets an instance attribute shadow the method, and the bound
  method taken before still mutates the options;
- on SIGHUP, oslo.service's threading launcher (cotyledon's master, with
  ``restart_method='mutate'``, as barbican-worker launches in
  worker/cmd/worker.py) calls ``conf.mutate_config_files()`` through the
  instance, not ``cfg.ConfigOpts.mutate_config_files(conf)`` nor an
  internal of its own. Since oslo.service 4.4 that call is
  ``cotyledon.oslo_config_glue._configfile_reload()``, run in the master
  from the ServiceManager's ``on_reload`` hook that the threading
  backend links (``oslo_config_glue.link(..., reload_method=
  restart_method)`` in ``_get_service_manager()`` from 4.5 on) for both
  ServiceLauncher (one worker) and ProcessLauncher. oslo.service 4.2 and
  4.3 linked it without ``reload_method``: SIGHUP called
  ``reload_config_files()`` and the SIGHUP test fails there.

barbican-retry's SIGHUP goes through the project's own in-process runner,
which calls ``service.reload(conf)``; no library is involved there.

Each test names, when it fails, the library change and the code that
depends on it. The versions they were checked on are written beside the
bounds in requirements.txt.
"""

import os
import signal
import subprocess
import sys
import time

from oslo_config import cfg
import pytest

_REFUSE = 'worker/conf/__init__.py refuse_invalid_reloads()'

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))

# Launches a service as barbican-worker does, with the instance attribute
# replaced as refuse_invalid_reloads() replaces it; every process leaves
# a file named after what it did and its pid. A file, run as a script, so
# that a launcher that spawns (rather than forks) its workers can import
# the service's class in them.
_LAUNCHER = '''
import os
import sys

import worker  # noqa: F401 (selects oslo.service's threading backend)

from oslo_config import cfg
from oslo_service import service


def mark(what):
    marks = os.environ['BARBICAN_RETRY_TEST_MARKS']
    open(os.path.join(marks, '%s-%d' % (what, os.getpid())), 'w').close()


class Service(service.Service):
    def start(self):
        super().start()
        mark('started')


def refuse_invalid_reloads(conf):
    # A closure on the instance, as worker.conf's.
    mutate = conf.mutate_config_files

    def checked_mutate():
        mark('mutated')
        return mutate()

    conf.mutate_config_files = checked_mutate


if __name__ == '__main__':
    conf = cfg.ConfigOpts()
    conf([], default_config_files=[])
    refuse_invalid_reloads(conf)
    launcher = service.launch(conf, Service(), workers=int(sys.argv[1]),
                              restart_method='mutate')
    sys.exit(launcher.wait())
'''

_MARKS = 'BARBICAN_RETRY_TEST_MARKS'

_TIMEOUT = 20


def _wait_for(condition, timeout=_TIMEOUT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def _marks(directory, what):
    return [name for name in os.listdir(directory)
            if name.startswith(what + '-')]


def test_an_instance_attribute_shadows_mutate_config_files(tmp_path):
    """conf.mutate_config_files() calls the replacement.

    And the bound method taken before it still takes the new values.
    """
    config_file = tmp_path / 'reload.conf'
    config_file.write_text('[DEFAULT]\nperiod = 1\n')
    conf = cfg.ConfigOpts()
    conf.register_opt(cfg.IntOpt('period', default=0, mutable=True))
    conf([], default_config_files=[str(config_file)])
    mutate = conf.mutate_config_files
    calls = []

    def checked_mutate():
        calls.append(True)
        return mutate()

    try:
        conf.mutate_config_files = checked_mutate
    except AttributeError as exc:
        pytest.fail('oslo.config: a ConfigOpts no longer takes an instance '
                    'attribute mutate_config_files (%s): %s sets one'
                    % (exc, _REFUSE))
    config_file.write_text('[DEFAULT]\nperiod = 2\n')
    conf.mutate_config_files()
    assert calls == [True], (
        'oslo.config: conf.mutate_config_files() no longer calls the '
        'instance attribute that %s sets' % _REFUSE)
    assert conf.period == 2, (
        'oslo.config: the bound mutate_config_files taken before %s '
        'replaced it no longer takes the new values (period is %r, not 2)'
        % (_REFUSE, conf.period))


@pytest.mark.parametrize('workers', [1, 2],
                         ids=['ServiceLauncher', 'ProcessLauncher'])
def test_sighup_calls_mutate_config_files_through_the_instance(tmp_path,
                                                               workers):
    """A real launcher, a real SIGHUP: the replacement runs in the master."""
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        [_ROOT] + [p for p in [env.get('PYTHONPATH')] if p])
    env.pop('NOTIFY_SOCKET', None)
    marks = tmp_path / 'marks'
    marks.mkdir()
    env[_MARKS] = str(marks)
    script = tmp_path / 'launcher.py'
    script.write_text(_LAUNCHER)
    # Its own session: cotyledon signals its whole process group.
    launcher = subprocess.Popen(
        [sys.executable, str(script), str(workers)],
        cwd=str(tmp_path), env=env, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    started = called = False
    try:
        started = _wait_for(
            lambda: len(_marks(marks, 'started')) >= workers or
            launcher.poll() is not None) and launcher.poll() is None
        if started:
            os.kill(launcher.pid, signal.SIGHUP)
            called = _wait_for(
                lambda: os.path.exists(
                    os.path.join(marks, 'mutated-%d' % launcher.pid)))
    finally:
        if launcher.poll() is None:
            os.kill(launcher.pid, signal.SIGTERM)
        try:
            output, _ = launcher.communicate(timeout=_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(launcher.pid, signal.SIGKILL)
            output, _ = launcher.communicate()
    output = output.decode(errors='replace')
    assert started, (
        "oslo.service's threading launcher did not start %d worker(s) "
        "with restart_method='mutate' within %ds: the test cannot tell "
        'whether SIGHUP still calls conf.mutate_config_files, which %s '
        'replaces. Launcher output:\n%s' % (workers, _TIMEOUT, _REFUSE,
                                            output))
    assert called, (
        "oslo.service's threading launcher (cotyledon, "
        "restart_method='mutate', %d worker(s)) does not call "
        'conf.mutate_config_files through the ConfigOpts instance on '
        'SIGHUP: %s replaces that attribute for barbican-worker '
        '(worker/cmd/worker.py), whose reloads would now take unchecked '
        'values. Launcher output:\n%s' % (workers, _REFUSE, output))
