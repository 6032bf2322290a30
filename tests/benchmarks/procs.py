"""Real ``barbican-worker`` and ``barbican-retry`` processes for benchmarks.

Config files and processes are the functional tests' own
(``tests.functional.processes``); this adds what a measurement needs on
top: starting a deployment and waiting until it serves, reading pass
timings back from the daemon's log, polling the orders table, and sampling
a process tree's memory.
"""

import contextlib
import datetime
import re
import threading
import time

import psutil
import sqlalchemy as sa

from tests.benchmarks import statements
from tests.functional import processes
from worker.db import models

# oslo.log's default line: "2026-01-01 12:00:00.123 4242 DEBUG name [-] msg".
_LOG_LINE = re.compile(
    r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) (\d+) \w+ \S+ .*?'
    r'Pass (?:dispatched .* in (\d+\.\d+)s|found nothing due '
    r'\((\d+\.\d+)s\))')


def write_config(workdir, name, database_url, transport_url, topic,
                 options=None):
    """A config file as the functional tests write it, ``debug`` off.

    The benchmark runs at the log level operators run (INFO): DEBUG lines
    cost time in the very loops being measured. ``options`` may turn it
    back on where a measurement reads DEBUG lines.
    """
    merged = {'DEFAULT': {'debug': 'false'}}
    for group, values in (options or {}).items():
        merged.setdefault(group, {}).update(values)
    return processes.write_config(workdir / ('%s.conf' % name), database_url,
                                  transport_url, topic, merged)


@contextlib.contextmanager
def running(workdir, config, script, name, ready_text, ready_count=1,
            timeout=90, environ=None):
    """Run one console script until the block exits (then SIGTERM it).

    Its log file is new (``Daemon`` appends), so lines counted in it are
    this run's only. ``environ``: its environment (the test plugins':
    ``tests.functional.processes.plugin_environment``), or this one's.
    """
    log_path = workdir / ('%s.log' % name)
    serial = 1
    while log_path.exists():
        serial += 1
        log_path = workdir / ('%s-%d.log' % (name, serial))
    daemon = processes.Daemon(script, config, log_path, env=environ)
    daemon.start()
    try:
        daemon.wait_for_log(ready_text, count=ready_count, timeout=timeout)
        yield daemon
    finally:
        try:
            daemon.stop(timeout=30)
        except AssertionError:
            pass  # killed by stop() itself; the figures are taken already


def workers(workdir, config, count, name='workers', environ=None):
    """``barbican-worker`` with ``count`` processes, once all serve."""
    return running(workdir, config, 'barbican-worker', name,
                   'serving topic', ready_count=count, environ=environ)


def scheduler(workdir, config, name='retry'):
    """One ``barbican-retry`` daemon, once its timer runs."""
    return running(workdir, config, 'barbican-retry', name,
                   'Retry scheduler started')


def utc_naive(seconds):
    """Epoch seconds as the naive UTC datetime the database stores."""
    return datetime.datetime(1970, 1, 1) + datetime.timedelta(
        seconds=seconds)


def epoch(value):
    """Naive UTC datetime as epoch seconds."""
    return (value - datetime.datetime(1970, 1, 1)).total_seconds()


def passes(log_text):
    """Passes that held the lock, from a daemon's log (needs DEBUG).

    :returns: list of ``(start_epoch, duration_seconds, pid)``; the line is
        written at the end of the pass, so start = stamp - duration.
    """
    found = []
    for line in log_text.splitlines():
        match = _LOG_LINE.match(line)
        if not match:
            continue
        stamp = datetime.datetime.strptime(match.group(1),
                                           '%Y-%m-%d %H:%M:%S.%f')
        duration = float(match.group(3) or match.group(4))
        # oslo.log writes local time; the conversion keeps gaps exact.
        end = time.mktime(stamp.timetuple()) + stamp.microsecond / 1e6
        found.append((end - duration, duration, int(match.group(2))))
    return found


def wait_for_status(database, prefix, count, status=models.ACTIVE,
                    timeout=300.0, interval=0.25):
    """Poll until ``count`` orders of ``prefix`` have ``status``.

    :returns: ``(reached, last_updated_at)`` where ``last_updated_at`` is the
        latest ``updated_at`` among them (when the last one got there).
    """
    order = models.Order
    query = (sa.select(sa.func.count(), sa.func.max(order.updated_at))
             .where(order.id.like(prefix + '%'), order.status == status))
    deadline = time.monotonic() + timeout
    while True:
        with database.session() as session:
            reached, last = session.execute(query).one()
        if reached >= count or time.monotonic() > deadline:
            return reached, last
        time.sleep(interval)


def count_in_log(daemon, text):
    """How many lines of the daemon's log contain ``text``."""
    return sum(1 for line in daemon.log().splitlines() if text in line)


def tree_cpu_seconds(pid):
    """User + system CPU seconds of a process and all its descendants.

    Children that ended and were waited for count through their parent's
    ``children_*`` times; a pool's processes live as long as the
    measurement, so a reading at each end gives the CPU spent between.
    """
    root = psutil.Process(pid)
    total = 0.0
    for process in [root] + root.children(recursive=True):
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += (times.user + times.system + times.children_user +
                  times.children_system)
    return total


#: The servers' processes, by what they are: RabbitMQ's Erlang VM, and
#: PostgreSQL's or MariaDB's server processes.
_SERVERS = {'beam.smp': 'broker', 'postgres': 'database',
            'mariadbd': 'database', 'mysqld': 'database'}


def servers_cpu_seconds():
    """``{(kind, pid): CPU seconds}`` of every broker and database server
    process on the machine (``_SERVERS``); read at both ends of a
    measurement, the difference is what the servers spent on it."""
    found = {}
    for process in psutil.process_iter(['name']):
        kind = _SERVERS.get(process.info['name'])
        if kind is None:
            continue
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        found[(kind, process.pid)] = times.user + times.system
    return found


def servers_cpu_spent(before, after):
    """``{kind: CPU seconds}`` between two ``servers_cpu_seconds``
    readings (a process that started between counts from zero)."""
    spent = {}
    for (kind, pid), seconds in after.items():
        spent[kind] = spent.get(kind, 0.0) + seconds - before.get(
            (kind, pid), 0.0)
    return spent


def largest_rss_mb(sampler, root_pid):
    """``(root, child)``: the largest RSS in MB the sampled tree's root
    reached, and the largest any one of its descendants reached."""
    root = child = 0.0
    for pid, (_, largest) in sampler.processes.items():
        if pid == root_pid:
            root = max(root, largest / (1024.0 * 1024.0))
        else:
            child = max(child, largest / (1024.0 * 1024.0))
    return root, child


class PoolWatch:
    """The CPU and memory of a worker pool and its retry daemon.

    Started when the work begins; ``stop`` gives the pool's CPU per step
    (every worker process, user + system) and the largest RSS that the
    pool's parent, any one of its worker processes and the daemon reached;
    the statements the pool sent per step when they are counted
    (``statements.enable``).
    """

    def __init__(self, workers, retry):
        self._workers = workers.process.pid
        self._retry = retry.process.pid
        self._cpu = tree_cpu_seconds(self._workers)
        self._statements = statements.totals()
        self._samplers = [RssSampler(pid, interval=0.5).start()
                          for pid in (self._workers, self._retry)]

    def stop(self, steps):
        """Stop sampling; the figures, per step over ``steps`` steps."""
        cpu = tree_cpu_seconds(self._workers) - self._cpu
        counted = statements.per_step(self._statements, statements.totals(),
                                      steps)
        for sampler in self._samplers:
            sampler.stop()
        parent, child = largest_rss_mb(self._samplers[0], self._workers)
        retry, _ = largest_rss_mb(self._samplers[1], self._retry)
        return {'worker_cpu_seconds': cpu,
                'cpu_ms_per_step': (1000.0 * cpu / steps if steps
                                    else float('nan')),
                'worker_parent_mb': parent, 'worker_process_mb': child,
                'retry_mb': retry, **counted}


class RssSampler:
    """Samples the memory of a process and all its children in a thread.

    Two sums per sample: RSS (what the target names; it counts the pages
    a forked child shares with its parent twice) and PSS (each shared page
    split between its sharers: what the tree really occupies).
    """

    def __init__(self, pid, interval=0.1):
        self._process = psutil.Process(pid)
        self._interval = interval
        self._stop = threading.Event()
        self._thread = None
        self.samples = []   # (monotonic seconds, RSS bytes, PSS bytes)
        self.processes = {}  # pid -> (name, largest RSS bytes)

    def _total(self):
        try:
            tree = [self._process] + self._process.children(recursive=True)
        except psutil.NoSuchProcess:
            return None
        rss = pss = 0
        for process in tree:
            try:
                info = process.memory_full_info()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            rss += info.rss
            pss += info.pss
            name, largest = self.processes.get(process.pid, (None, 0))
            if info.rss > largest:
                self.processes[process.pid] = (
                    ' '.join(process.cmdline()[:1]) or process.name(),
                    info.rss)
        return rss, pss

    def _run(self):
        while not self._stop.is_set():
            value = self._total()
            if value is not None:
                self.samples.append((time.monotonic(),) + value)
            self._stop.wait(self._interval)

    def start(self):
        """Start sampling."""
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def stop(self):
        """Stop sampling."""
        self._stop.set()
        self._thread.join()

    def peak_since(self, since=0.0, pss=False):
        """Largest RSS (or PSS) sum at or after ``since`` (monotonic)."""
        values = [sample[2 if pss else 1] for sample in self.samples
                  if sample[0] >= since]
        return max(values) if values else 0
