"""The broker and database servers a chaos run (or a benchmark) uses.

When ``bin/run-tests.sh`` already started them (its variables are in the
environment, e.g. from ``. SERVICES_DIR/env``) they are reused; otherwise
``tests/functional/services.sh`` starts throwaway instances for this run
and stops them at the end. ``Clusters`` does the same with the MariaDB
Galera and RabbitMQ clusters of ``tests/functional/cluster.sh``.
"""

import os
import shlex
import signal
import subprocess
import sys
import threading
import urllib.parse

import sqlalchemy as sa

from tests.functional import processes

SERVICES_SCRIPT = os.path.join(processes.REPO_ROOT, 'tests', 'functional',
                               'services.sh')
CLUSTER_SCRIPT = os.path.join(processes.REPO_ROOT, 'tests', 'functional',
                              'cluster.sh')
TRANSPORT_VARIABLE = 'BARBICAN_RETRY_TEST_TRANSPORT_URL'
CLUSTER_VARIABLE = 'BARBICAN_RETRY_TEST_CLUSTER_DIR'
NAMESPACES_VARIABLE = 'BARBICAN_RETRY_TEST_CLUSTER_HOST_NAMESPACES'
#: The exit status of cluster.sh when --network cannot run here.
NETWORK_SKIP_STATUS = 77


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


def _run_script(action, directory, script=SERVICES_SCRIPT, extra=()):
    """Run ``services.sh ACTION DIR`` (or ``script``) to its end, even
    through Ctrl-C.

    Returns ``(returncode, interrupt)``, the KeyboardInterrupt caught
    meanwhile or None. The script ignores SIGINT: killed halfway by the
    terminal's Ctrl-C (or by subprocess.run, which kills its child on
    KeyboardInterrupt) it would leave servers running that nobody stops.
    It has timeouts of its own, so waiting for it is bounded.
    """
    command = [script, action, directory] + list(extra)
    # The chaos runs and the benchmarks need no Keystone (the functional
    # tests' servers, services.sh, start one otherwise).
    env = dict(os.environ, BARBICAN_RETRY_TEST_NO_KEYSTONE='1')
    if threading.current_thread() is threading.main_thread():
        # Ignored signals stay ignored across exec, and bash cannot trap
        # a signal ignored on entry: the script and its commands never see
        # Ctrl-C. Only the main thread may change handlers.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            process = subprocess.Popen(command, env=env)
        finally:
            signal.signal(signal.SIGINT, previous)
    else:
        process = subprocess.Popen(command, env=env)
    interrupt = None
    while True:
        try:
            return process.wait(), interrupt
        except KeyboardInterrupt as exc:
            interrupt = exc
            sys.stderr.write('services: interrupted; letting %s %s '
                             'finish, then stopping the servers\n'
                             % (os.path.basename(script), action))


class _Started:
    """Servers started by one of the scripts, stopped by ``close``."""

    #: The script that starts and stops them.
    SCRIPT = SERVICES_SCRIPT

    _started_dir = None
    #: The variables of the servers started, set in ``os.environ`` until
    #: ``close``.
    _variables: dict = {}
    #: Arguments of the script's ``start`` after the directory.
    _start_arguments: tuple = ()

    def _start(self, directory, why):
        sys.stderr.write('services: %s; starting them in %s\n'
                         % (why, directory))
        os.makedirs(directory, exist_ok=True)
        # Set before the start: whatever happens from here, close() stops
        # what was started.
        self._started_dir = directory
        returncode, interrupt = _run_script('start', directory, self.SCRIPT,
                                            self._start_arguments)
        if interrupt is not None or returncode:
            self.close()
            if interrupt is not None:
                raise interrupt
            if returncode == NETWORK_SKIP_STATUS:
                raise NetworkUnavailable(
                    'cluster.sh start --network needs root (ip netns, nft)')
            raise subprocess.CalledProcessError(
                returncode, [self.SCRIPT, 'start', directory])
        self._variables = _read_env_file(os.path.join(directory, 'env'))
        os.environ.update(self._variables)

    def close(self):
        """Stop the servers this run started (not ones it reused).

        Ctrl-C meanwhile does not cut the stop short; it is raised once
        the servers are down.
        """
        if not self._started_dir:
            return
        directory, self._started_dir = self._started_dir, None
        # Stopped, they are no longer there to be reused (by the tests
        # that come next in the same process).
        for name in self._variables:
            os.environ.pop(name, None)
        returncode, interrupt = _run_script('stop', directory, self.SCRIPT)
        if returncode:
            sys.stderr.write('services: %s stop %s exited %d\n'
                             % (os.path.basename(self.SCRIPT), directory,
                                returncode))
        if interrupt is not None:
            raise interrupt


class Services(_Started):
    """Running RabbitMQ, PostgreSQL and MariaDB, with restart commands.

    ``required`` names the variables the caller needs (the broker's URL
    and, say, the PostgreSQL server's): when one is unset, a set of
    servers of its own is started under ``workdir/services``.
    """

    def __init__(self, workdir, required=(TRANSPORT_VARIABLE,)):
        missing = [name for name in required if not os.environ.get(name)]
        if missing:
            self._start(os.path.join(workdir, 'services'),
                        '%s not set: RabbitMQ, PostgreSQL and MariaDB'
                        % ', '.join(missing))
        self.transport_url = os.environ[TRANSPORT_VARIABLE]

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


class NetworkUnavailable(Exception):
    """``cluster.sh --network`` cannot run here (not root, no netem)."""


class Clusters(_Started):
    """A 3-node MariaDB Galera cluster and a 3-node RabbitMQ cluster.

    Reused when ``BARBICAN_RETRY_TEST_CLUSTER_DIR`` names running ones
    (``. CLUSTER_DIR/env``); otherwise ``tests/functional/cluster.sh``
    starts them under ``workdir/cluster`` and ``close`` stops them.

    ``network``: the nodes and the hosts of the processes each in a
    network namespace (``cluster.sh start DIR --network``), for the
    network faults (``partition``, ``slow``). Running clusters are reused
    only if they were started so.
    """

    SCRIPT = CLUSTER_SCRIPT
    KINDS = ('galera', 'rabbitmq')

    def __init__(self, workdir, network=False):
        reusable = os.environ.get(CLUSTER_VARIABLE) and (
            not network or os.environ.get(NAMESPACES_VARIABLE))
        if network:
            self._start_arguments = ('--network',)
        if not reusable:
            self._start(os.path.join(workdir, 'cluster'),
                        '%s not set: a Galera and a RabbitMQ cluster%s'
                        % (CLUSTER_VARIABLE,
                           ' in network namespaces' if network else ''))
        self.directory = os.environ[CLUSTER_VARIABLE]
        #: The namespace of each node's host, empty without ``network``.
        self.host_namespaces = os.environ.get(
            NAMESPACES_VARIABLE, '').split() if network else []
        #: The runner's own address on the namespaces' bridge.
        self.runner_address = os.environ.get(
            'BARBICAN_RETRY_TEST_CLUSTER_RUNNER_ADDRESS', '127.0.0.1')
        self.galera_urls = os.environ[
            'BARBICAN_RETRY_TEST_GALERA_URLS'].split()
        self.rabbitmq_urls = os.environ[
            'BARBICAN_RETRY_TEST_RABBITMQ_CLUSTER_URLS'].split()
        #: The URL of HAProxy in front of the Galera nodes (node 1 the
        #: writer, the others backups).
        self.haproxy_url = os.environ['BARBICAN_RETRY_TEST_GALERA_HAPROXY_URL']

    @property
    def size(self):
        """The number of nodes of each cluster."""
        return len(self.galera_urls)

    @property
    def server_url(self):
        """The URL of Galera node 1, where test databases are created."""
        return self.galera_urls[0]

    def transport_url(self, first=0):
        """One URL naming every broker node, node ``first`` first: a
        client connects to it and fails over to the next ones."""
        hosts = [urllib.parse.urlsplit(url).netloc
                 for url in self.rabbitmq_urls]
        return 'rabbit://%s/' % ','.join(hosts[first:] + hosts[:first])

    def nodes(self, database_url, haproxy=True):
        """``(database_url, transport_url)`` of each node: broker node k
        first, and the database of ``database_url`` through HAProxy, as
        OpenStack deploys Galera (or, ``haproxy=False``, on Galera node
        k)."""
        url = sa.engine.make_url(database_url)
        galera = ([self.haproxy_url] * self.size if haproxy else
                  self.galera_urls)
        return [(url.set(host=sa.engine.make_url(node).host,
                         port=sa.engine.make_url(node).port)
                 .render_as_string(hide_password=False),
                 self.transport_url(number))
                for number, node in enumerate(galera)]

    def through_haproxy(self, database_url):
        """``database_url`` (on a Galera node) through HAProxy."""
        return self.nodes(database_url)[0][0]

    def node(self, action, kind, number):
        """``stop``, ``kill`` or ``start`` node ``number`` (from 1) of
        ``kind`` (``galera``, ``rabbitmq``); waits until it is done (a
        started node has rejoined its cluster)."""
        subprocess.run([CLUSTER_SCRIPT, 'node-%s' % action, self.directory,
                        kind, str(number)],
                       check=True, capture_output=True, timeout=300)

    def network(self, command, *args):
        """Run ``cluster.sh COMMAND DIR ARGS`` (partition, heal, slow,
        restore, settle): see tests/functional/netns.sh.

        Returns what the command said on its standard error (a broker it
        had to restart).

        :raises NetworkUnavailable: when the machine cannot (a slow link
            without netem in the kernel).
        :raises subprocess.CalledProcessError: when it failed; its
            message ends with what the command said.
        """
        result = subprocess.run(
            [CLUSTER_SCRIPT, command, self.directory] + [str(arg)
                                                         for arg in args],
            capture_output=True, text=True, timeout=400)
        if result.returncode == NETWORK_SKIP_STATUS:
            raise NetworkUnavailable(result.stderr.strip())
        if result.returncode:
            raise _Failed(result.returncode, result.args, result.stdout,
                          result.stderr)
        return result.stderr


class _Failed(subprocess.CalledProcessError):
    """A ``cluster.sh`` command that failed, and why (its last lines)."""

    def __str__(self):
        return '%s: %s' % (super().__str__(),
                           ' | '.join(self.stderr.strip().splitlines()[-5:]))
