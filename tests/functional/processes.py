"""Real barbican-retry processes for functional tests.

The console scripts installed beside the test interpreter are started as
subprocesses from a generated configuration file, each in a process group
of its own so that a test can SIGTERM or SIGKILL it with its children.
"""

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid

from worker.db import models
from worker.db import orders

BIN_DIR = os.path.dirname(sys.executable)
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def plugin_environment(directory, plugin_log):
    """Environment that registers the test plugin and order type.

    stevedore finds plugins through installed distributions' entry points;
    a distribution's metadata folder on PYTHONPATH registers the test
    plugin for the processes started with this environment only.
    """
    dist_info = os.path.join(str(directory),
                             'barbican_retry_test_plugin-0.dist-info')
    os.makedirs(dist_info, exist_ok=True)
    with open(os.path.join(dist_info, 'METADATA'), 'w') as metadata:
        metadata.write('Metadata-Version: 2.1\n'
                       'Name: barbican-retry-test-plugin\nVersion: 0\n')
    with open(os.path.join(dist_info, 'entry_points.txt'), 'w') as points:
        points.write('[barbican_retry.certificate.plugins]\n'
                     'recording = tests.plugin:RecordingPlugin\n'
                     '[barbican_retry.order_types]\n'
                     'recording_fanout = tests.plugin:RecordingFanout\n'
                     'growing = tests.plugin:Growing\n'
                     'recording_limited = tests.plugin:RecordingLimited\n'
                     'remote_call = tests.plugin:RemoteCall\n'
                     'single_step = tests.plugin:SingleStep\n'
                     'sleeping = tests.plugin:SleepingOrder\n'
                     'changing = tests.plugin:Changing\n')
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join(
        [str(directory), REPO_ROOT] +
        ([env['PYTHONPATH']] if env.get('PYTHONPATH') else []))
    env['BARBICAN_RETRY_TEST_PLUGIN_LOG'] = str(plugin_log)
    return env


def write_config(path, database_url, transport_url, topic, options=None):
    """Write a configuration file; ``options`` maps group -> {name: value}.

    Every test uses its own topic, so tests never see each other's
    messages on the shared broker.
    """
    groups = {
        'DEFAULT': {'transport_url': transport_url, 'debug': 'true'},
        'database': {'connection': database_url},
        'worker': {'topic': topic},
    }
    for group, values in (options or {}).items():
        groups.setdefault(group, {}).update(values)
    with open(path, 'w') as config_file:
        for group, values in groups.items():
            config_file.write('[%s]\n' % group)
            for name, value in values.items():
                config_file.write('%s = %s\n' % (name, value))
            config_file.write('\n')
    return path


def new_topic():
    """Return a topic name of its own for one test."""
    return 'brtest_%s' % uuid.uuid4().hex[:10]


def manage(config_path, *args, check=True, env=None):
    """Run ``barbican-retry-manage``; returns the CompletedProcess."""
    return subprocess.run(
        [os.path.join(BIN_DIR, 'barbican-retry-manage'),
         '--config-file', str(config_path)] + list(args),
        capture_output=True, text=True, check=check, timeout=120, env=env)


def manage_json(config_path, *args):
    """Run a listing command with ``-f json``; returns the parsed output."""
    return json.loads(manage(config_path, *args, '-f', 'json').stdout)


class Daemon:
    """One console script running in its own process group."""

    def __init__(self, script, config_path, log_path, env=None, args=(),
                 netns=None):
        self.script = script
        #: The network namespace it runs in (``ip netns exec``), or None.
        self.netns = netns
        self.config_path = str(config_path)
        self.log_path = str(log_path)
        self.env = env
        self.args = list(args)
        self.process = None

    def start(self):
        """Start the process, appending its output to the log file."""
        # ip netns exec execs the script: the process keeps its pid.
        prefix = ['ip', 'netns', 'exec', self.netns] if self.netns else []
        with open(self.log_path, 'a') as log:
            self.process = subprocess.Popen(
                prefix + [os.path.join(BIN_DIR, self.script),
                          '--config-file', self.config_path] + self.args,
                stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, env=self.env)
        return self

    def log(self):
        """Return what the process logged so far."""
        with open(self.log_path) as log:
            return log.read()

    def wait_for_log(self, text, count=1, timeout=60):
        """Wait until ``text`` appears ``count`` times in the log."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.log().count(text) >= count:
                return
            if self.process.poll() is not None:
                raise AssertionError('%s exited with %s:\n%s' % (
                    self.script, self.process.returncode, self.log()[-3000:]))
            time.sleep(0.1)
        raise AssertionError('%r not seen %d times in %s within %ss' % (
            text, count, self.script, timeout))

    def signal(self, signum):
        """Send ``signum`` to the whole process group."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signum)

    def stop(self, timeout=30):
        """SIGTERM, wait; SIGKILL if it does not exit in time."""
        if self.process is None:
            return None
        self.signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError('%s did not stop within %ss'
                                 % (self.script, timeout))

    def children(self):
        """Return the pids of the processes the launcher forked."""
        found = []
        for entry in os.listdir('/proc'):
            if not entry.isdigit():
                continue
            try:
                with open('/proc/%s/stat' % entry) as stat:
                    # The parent pid is the 2nd field after "(comm)".
                    ppid = int(stat.read().rsplit(')', 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == self.process.pid:
                found.append(int(entry))
        return found

    def kill(self):
        """SIGKILL the process group."""
        self.signal(signal.SIGKILL)
        if self.process is not None:
            self.process.wait(30)


class Deployment:
    """A configuration, its processes, and the test plugin's call log.

    :param options: ``{group: {name: value}}`` for the config file.
    """

    def __init__(self, directory, database_url, transport_url, options,
                 nodes=(), namespaces=()):
        self.directory = directory
        self.database_url = database_url
        self.transport_url = transport_url
        #: ``(database_url, transport_url)`` of each node of a cluster:
        #: the daemons are spread over them (``start``), one config each.
        self.nodes = list(nodes)
        #: The network namespace of each node's host (cluster.sh start
        #: --network), where its daemons run; empty: here.
        self.namespaces = list(namespaces)
        self._placed = 0
        self.topic = new_topic()
        self.config = os.path.join(str(directory), 'barbican-retry.conf')
        self.plugin_log = os.path.join(str(directory), 'plugin-calls.jsonl')
        self.env = plugin_environment(
            os.path.join(str(directory), 'plugins'), self.plugin_log)
        self.daemons = []
        self.configure(options)

    def configure(self, options):
        """(Re)write the config file with ``options``."""
        write_config(self.config, self.database_url, self.transport_url,
                     self.topic, options)
        if self.nodes:
            # Processes on different Galera nodes: reads wait for what
            # other nodes committed before them (doc/install.md).
            options = dict(options or {})
            options['database'] = dict(options.get('database', {}),
                                       mysql_wsrep_sync_wait='1')
        for number, (database_url, transport_url) in enumerate(self.nodes):
            write_config(self.node_config(number), database_url,
                         transport_url, self.topic, options)

    def node_config(self, number):
        """The config file of the daemons placed on node ``number``."""
        return os.path.join(str(self.directory), 'node-%d.conf' % number)

    def start(self, script, name, env=None, node=None, args=()):
        """Start ``script`` logging to ``<name>.log``; returns the Daemon.

        ``env``: variables to add to this process's environment; ``args``:
        command-line arguments after ``--config-file``. On a cluster the
        daemon is placed on node ``node``, by default on the node after
        the last one used.
        """
        config = self.config
        netns = None
        if self.nodes:
            if node is None:
                node, self._placed = self._placed, self._placed + 1
            config = self.node_config(node % len(self.nodes))
            if self.namespaces:
                netns = self.namespaces[node % len(self.nodes)]
        daemon = Daemon(script, config,
                        os.path.join(str(self.directory), name + '.log'),
                        env=dict(self.env, **(env or {})), args=args,
                        netns=netns)
        self.daemons.append(daemon.start())
        return daemon

    def manage_json(self, *args):
        """Run a ``barbican-retry-manage`` listing; returns parsed JSON."""
        return json.loads(manage(self.config, *args, '-f', 'json',
                                 env=self.env).stdout)

    def kill_all(self):
        """SIGKILL whatever is still running."""
        for daemon in self.daemons:
            daemon.kill()


def free_port():
    """A TCP port free on 127.0.0.1 now (a metrics endpoint, a receiver).

    Drawn from 20000-32767, as ``services.sh`` draws its servers' ports:
    below the kernel's ephemeral range, so that no outgoing connection of
    another process takes it while the listener that owns it restarts.
    """
    draw = random.Random()
    for _ in range(200):
        port = draw.randint(20000, 32767)
        with socket.socket() as sock:
            try:
                sock.bind(('127.0.0.1', port))
            except OSError:
                continue
            return port
    raise RuntimeError('no free port in 20000-32767 on 127.0.0.1')


def scrape(port):
    """The text of the metrics endpoint on ``port`` of 127.0.0.1."""
    with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port,
                                timeout=5) as response:
        return response.read().decode()


def api_healthy(base_url, daemon):
    """Whether ``barbican-retry-api`` at ``base_url`` answers its
    ``/healthcheck`` with 200.

    :raises AssertionError: with the end of its log, if it exited.
    """
    if daemon.process.poll() is not None:
        raise AssertionError('barbican-retry-api exited:\n%s'
                             % daemon.log()[-3000:])
    try:
        with urllib.request.urlopen(base_url + '/healthcheck',
                                    timeout=5) as response:
            return response.status == 200
    except OSError:
        # Not listening yet, or its workers still loading the app (an
        # HTTPError, 503, is an OSError too).
        return False


def wait_for(predicate, timeout, what):
    """Poll ``predicate`` until it returns a true value; return it.

    :raises AssertionError: naming ``what`` after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError('timed out after %ss waiting for %s' % (timeout,
                                                                 what))


def all_active(database, total):
    """True if the database holds exactly ``total`` orders, all ACTIVE."""
    with database.session() as session:
        return orders.count_by_status(session) == {models.ACTIVE: total}
