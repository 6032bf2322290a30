"""The broker and database servers a chaos run (or a benchmark) uses.

When ``bin/run-tests.sh`` already started them (its variables are in the
environment, e.g. from ``. SERVICES_DIR/env``) they are reused; otherwise
``tests/functional/services.sh`` starts throwaway instances for this run
and stops them at the end.
"""

import os
import shlex
import signal
import subprocess
import sys
import threading

from tests.functional import processes

SERVICES_SCRIPT = os.path.join(processes.REPO_ROOT, 'tests', 'functional',
                               'services.sh')
TRANSPORT_VARIABLE = 'BARBICAN_RETRY_TEST_TRANSPORT_URL'


def url_variable(backend):
    """The variable holding the URL of ``backend``'s server, or None.

    SQLite needs no server.
    """
    if backend == 'sqlite':
        return None
    return 'BARBICAN_RETRY_TEST_%s_URL' % backend.upper()


def make_reachable(path):
    """Let the servers started as root reach their data under ``path``.

    tempfile.mkdtemp makes ``path`` private (0700). As root,
    services.sh runs PostgreSQL and MariaDB as their own users
    (``postgres``, ``mysql``), which must traverse it to reach their
    directories in it; 0711 lets them without letting them list it. As
    an ordinary user the servers run as that user: nothing to change.
    """
    if os.geteuid() == 0:
        os.chmod(path, os.stat(path).st_mode & 0o7777 | 0o711)


def _read_env_file(path):
    values = {}
    with open(path) as env_file:
        for line in env_file:
            line = line.strip()
            if line.startswith('export '):
                name, _, value = line[len('export '):].partition('=')
                values[name] = shlex.split(value)[0] if value else ''
    return values


def _run_script(action, directory):
    """Run ``services.sh ACTION DIR`` to its end, even through Ctrl-C.

    Returns ``(returncode, interrupt)``, the KeyboardInterrupt caught
    meanwhile or None. The script ignores SIGINT: killed halfway by the
    terminal's Ctrl-C (or by subprocess.run, which kills its child on
    KeyboardInterrupt) it would leave servers running that nobody stops.
    It has timeouts of its own, so waiting for it is bounded.
    """
    command = [SERVICES_SCRIPT, action, directory]
    if threading.current_thread() is threading.main_thread():
        # Ignored signals stay ignored across exec, and bash cannot trap
        # a signal ignored on entry: the script and its commands never see
        # Ctrl-C. Only the main thread may change handlers.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            process = subprocess.Popen(command)
        finally:
            signal.signal(signal.SIGINT, previous)
    else:
        process = subprocess.Popen(command)
    interrupt = None
    while True:
        try:
            return process.wait(), interrupt
        except KeyboardInterrupt as exc:
            interrupt = exc
            sys.stderr.write('services: interrupted; letting services.sh '
                             '%s finish, then stopping the servers\n'
                             % action)


class Services:
    """Running RabbitMQ, PostgreSQL and MariaDB, with restart commands.

    ``required`` names the variables the caller needs (the broker's URL
    and, say, the PostgreSQL server's): when one is unset, a set of
    servers of its own is started under ``workdir/services``.
    """

    def __init__(self, workdir, required=(TRANSPORT_VARIABLE,)):
        self._started_dir = None
        missing = [name for name in required if not os.environ.get(name)]
        if missing:
            self._start(os.path.join(workdir, 'services'), missing)
        self.transport_url = os.environ[TRANSPORT_VARIABLE]

    def _start(self, directory, missing):
        sys.stderr.write('services: %s not set; starting RabbitMQ, '
                         'PostgreSQL and MariaDB in %s\n'
                         % (', '.join(missing), directory))
        os.makedirs(directory, exist_ok=True)
        # Set before the start: whatever happens from here, close() stops
        # what was started.
        self._started_dir = directory
        returncode, interrupt = _run_script('start', directory)
        if interrupt is not None or returncode:
            self.close()
            if interrupt is not None:
                raise interrupt
            raise subprocess.CalledProcessError(
                returncode, [SERVICES_SCRIPT, 'start', directory])
        os.environ.update(_read_env_file(os.path.join(directory, 'env')))

    @staticmethod
    def _run(variable):
        subprocess.run([os.environ[variable]], check=True,
                       capture_output=True, timeout=180)

    def restart(self, service, down_seconds, sleep):
        """Stop ``service`` (rabbitmq, postgresql, mysql), wait, start it."""
        self._run('BARBICAN_RETRY_TEST_%s_STOP' % service.upper())
        sleep(down_seconds)
        self._run('BARBICAN_RETRY_TEST_%s_START' % service.upper())

    def kill(self, service, down_seconds, sleep):
        """SIGKILL ``service``'s server (no clean stop), wait, start it."""
        with open(os.environ['BARBICAN_RETRY_TEST_%s_PID_FILE'
                             % service.upper()]) as pid_file:
            pid = int(pid_file.readline())
        os.kill(pid, signal.SIGKILL)
        while os.path.exists('/proc/%d' % pid):
            sleep(0.1)
        sleep(down_seconds)
        self._run('BARBICAN_RETRY_TEST_%s_START' % service.upper())

    def close(self):
        """Stop the servers this run started (not ones it reused).

        Ctrl-C meanwhile does not cut the stop short; it is raised once
        the servers are down.
        """
        if not self._started_dir:
            return
        directory, self._started_dir = self._started_dir, None
        returncode, interrupt = _run_script('stop', directory)
        if returncode:
            sys.stderr.write('services: services.sh stop %s exited %d\n'
                             % (directory, returncode))
        if interrupt is not None:
            raise interrupt
