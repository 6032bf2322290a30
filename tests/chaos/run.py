"""The chaos scenario: a cluster under SIGKILLs and server restarts.

With ``--cluster`` the database is a 3-node MariaDB Galera cluster behind
HAProxy (node 1 the writer, the others backups) and the broker a 3-node
RabbitMQ cluster, each daemon on its own broker node: nodes are killed or
stopped and started again, one at a time, in place of the single
servers' restarts; the Galera kill is of the writer (HAProxy fails over).
With ``quorum_seconds`` two of three Galera nodes, then two of three
brokers, go down at once for that long, and come back. A probe writing
through HAProxy and one watching the orders finish time each node fault
(``fault_times``): how long writes and progress stalled, and how soon
they resumed once the nodes were back.

The orders are of one recorded order type (``tests/plugin.py``):
``certificate`` runs the certificate type over the recording certificate
plugin, ``fanout`` the ``recording_fanout`` type, whose runs record their
idempotency keys as a remote service counting distinct keys would see
them.
"""

import dataclasses
import os
import random
import signal
import subprocess
import threading
import time

from tests.chaos import checks
from tests.chaos import network as network_faults
from tests.functional import databases
from tests.functional import probes
from tests.functional import processes
from tests.functional import receiver as receivers
from worker.common import clock
from worker.db import migration
from worker.db import models
from worker.db import orders
from worker.db import session as db_session

# Short periods so that a run of minutes exercises many passes, deaths
# and recoveries.
OPTIONS = {
    'DEFAULT': {'service_down_time': 3, 'report_interval': 1,
                'debug': 'false'},
    'scheduler': {'schedule_period_seconds': 1, 'schedule_jitter': 0.3,
                  'dispatch_deadline_seconds': 15, 'max_pass_seconds': 5,
                  'cast_timeout_seconds': 2, 'retry_lock_timeout_seconds': 20,
                  'batch_size': 200},
    # A worker dies every 4 to 5 s here: a step in flight (running, or its
    # result waiting for its batch) at 3 deaths in a row is no rarity, as
    # it is in a pool whose workers die once a day. Measured with 3: one
    # order in 100 failed so, beside the poison ones.
    'worker': {'workers': 1, 'certificate_plugin': 'recording',
               'max_step_crashes': 5,
               'max_unavailable_retries': 3,
               'unavailable_backoff_base_seconds': 0.5,
               'unavailable_backoff_max_seconds': 2},
    'simple_certificate': {'delay_before_update_seconds': 1},
    'fanout': {'poll_interval_seconds': 0.5},
    # Every order notifies a receiver of this process, which goes down
    # for a while; its URL must never become unavailable.
    'notifications': {'allowed_hosts': '127.0.0.1',
                      'secret': 'chaos-secret', 'timeout_seconds': 2,
                      'retry_base_seconds': 0.5, 'retry_max_seconds': 3,
                      'max_consecutive_failures': 100000},
    # The leases of the steps that _HUNG orders hold past them.
    'step:certificate.process_type_order': {'timeout_seconds': 6},
    'step:recording_fanout.issue': {'timeout_seconds': 6},
    # The resource of the recording_limited orders: two runs at once per
    # key, whatever dies.
    'resource:chaos': {'capacity': 2},
}
#: The order type of the resource-limited orders created beside the run's
#: own type, and the keys they share.
LIMITED_TYPE = 'recording_limited'
LIMITED_KEYS = ('a', 'b')
# On the clusters a process is declared dead after 10 s, not 3: a Galera
# failover holds every write (heartbeats too) until the cluster has
# evicted the dead node (evs.suspect_timeout, 5 s) and HAProxy has marked
# it down, measured 6 to 7 s; with 3 s every live worker looked dead
# after it and the steps it ran were counted as crashes, enough to fail
# a step by max_step_crashes. service_down_time must exceed a failover's
# stall (doc/install.md, "Timeouts that match").
CLUSTER_DEFAULTS = dict(OPTIONS['DEFAULT'], service_down_time=10)
# --type: the order type the orders are created with.
ORDER_TYPES = {'certificate': 'certificate', 'fanout': 'recording_fanout'}
# --queues: durable classic queues (the default) or quorum queues.
QUEUES = {'classic': {},
          'quorum': {'oslo_messaging_rabbit': {'rabbit_quorum_queue': 'true'}}}
RETRY_DAEMONS = 2
WORKER_DAEMONS = 3
# Processes whose clocks are off (seconds; worker.common.clock's test
# variable), every time they are started: they correct by the database's
# clock, and the daemon beyond max_clock_offset_seconds judges no one.
SKEWED_CLOCKS = {'worker-0': -30.0, 'retry-0': 30.0}


@dataclasses.dataclass
class FaultTime:
    """How long one node fault stalled the run (seconds)."""

    #: ``kind-numbers:action``, as in ``Report.node_faults``.
    name: str
    #: The longest time without a write through HAProxy, and without an
    #: order finishing while some waited, from the fault until a little
    #: after its nodes were back.
    write_stall: float
    progress_stall: float
    #: From the quorum's return (the first node back) to the first write
    #: (Galera) or the first order finished (RabbitMQ); None: never.
    resumed: float | None

    def __str__(self):
        return '%s write_stall=%.1f progress_stall=%.1f resumed=%s' % (
            self.name, self.write_stall, self.progress_stall,
            'never' if self.resumed is None else '%.1f' % self.resumed)


@dataclasses.dataclass
class Report:
    """The figures of one run; ``ok`` when every count is as it must be."""

    db: str
    orders: int
    order_type: str = 'certificate'
    terminal: int = 0
    stuck: int = 0
    lost: int = 0
    double_terminal: int = 0
    stale_effects: int = 0
    queues: str = 'classic'
    kills: int = 0
    broker_restarts: int = 0
    broker_kills: int = 0
    db_restarts: int = 0
    skewed_clocks: int = len(SKEWED_CLOCKS)
    hung_calls: int = 0
    receiver_outages: int = 0
    #: Orders created with the receiver's callback URL (every other wave).
    subscribed: int = 0
    #: Distinct events the receiver acknowledged, and orders whose events
    #: it did not first see all, in sequence, ending with order.end.
    events: int = 0
    event_gaps: int = 0
    recovery_s: float = 0.0
    #: ``kind-number:kill`` or ``:stop`` for each node fault of a run on
    #: the clusters, in order.
    node_faults: list = dataclasses.field(default_factory=list)
    #: ``network.Fault.summary()`` of each network fault, in order.
    network_faults: list = dataclasses.field(default_factory=list)
    #: ``order create`` calls that hung past their timeout (tried again).
    create_timeouts: int = 0
    #: A ``FaultTime`` for each node fault.
    fault_times: list = dataclasses.field(default_factory=list)
    leftovers: dict = dataclasses.field(default_factory=dict)
    #: ``(steps, with several keys, keys shared)`` for a type that
    #: records its idempotency keys, else None.
    keys: tuple | None = None
    #: Poison orders (their step kills its worker on every run), and those
    #: of them that did not end ERROR after ``[worker] max_step_crashes``
    #: deaths of their worker, with the reason that says so.
    poison: int = 0
    poison_uncontained: int = 0
    #: Orders of ``LIMITED_TYPE``, the most of their runs that ran at once
    #: on one key, and the keys on which more than the capacity did.
    limited: int = 0
    most_at_once: int = 0
    capacity_exceeded: int = 0
    #: ``order_id: error_reason`` of the first few orders that ended in
    #: ERROR though they were not meant to.
    unexpected_errors: list = dataclasses.field(default_factory=list)

    @property
    def ok(self):
        """True when nothing was lost, stuck, doubled or left behind."""
        keys_ok = self.keys is None or (self.keys[0] > 0 and
                                        not any(self.keys[1:]))
        return (self.terminal == self.orders and not self.stuck and
                not self.lost and not self.double_terminal and
                self.poison > 0 and not self.poison_uncontained and
                self.limited > 0 and not self.capacity_exceeded and
                not self.stale_effects and keys_ok and
                self.events > 0 and not self.event_gaps and
                not any(self.leftovers.values()))

    def line(self):
        """The one-line summary."""
        extra = ' '.join('%s=%d' % item for item in self.leftovers.items())
        line = ('chaos: db=%s type=%s queues=%s orders=%d terminal=%d '
                'stuck=%d lost=%d double_terminal=%d stale_effects=%d '
                'kills=%d broker_restarts=%d broker_kills=%d '
                'db_restarts=%d skewed_clocks=%d hung_calls=%d '
                'receiver_outages=%d subscribed=%d events=%d '
                'event_gaps=%d poison=%d poison_uncontained=%d '
                'limited=%d most_at_once=%d capacity_exceeded=%d '
                'recovery_s=%.1f %s'
                % (self.db, self.order_type, self.queues, self.orders,
                   self.terminal, self.stuck, self.lost,
                   self.double_terminal, self.stale_effects, self.kills,
                   self.broker_restarts, self.broker_kills,
                   self.db_restarts, self.skewed_clocks, self.hung_calls,
                   self.receiver_outages, self.subscribed, self.events,
                   self.event_gaps, self.poison, self.poison_uncontained,
                   self.limited, self.most_at_once, self.capacity_exceeded,
                   self.recovery_s, extra)).rstrip()
        if self.node_faults:
            line += ' node_faults=%s' % ','.join(self.node_faults)
        if self.network_faults:
            line += ' network_faults=%s' % ','.join(self.network_faults)
        if self.create_timeouts:
            line += ' create_timeouts=%d' % self.create_timeouts
        if self.fault_times:
            line += '; fault times: ' + '; '.join(map(str, self.fault_times))
        if self.keys is not None:
            line += ('; keys: %d steps, %d with more than one key, %d '
                     'shared between steps' % self.keys)
        if self.unexpected_errors:
            line += '; unexpected ERROR: ' + '; '.join(
                self.unexpected_errors)
        return line


class Cluster:
    """The retry daemons and workers of one run, restarted when killed."""

    def __init__(self, deployment):
        self.deployment = deployment
        self.slots = {}
        self._starts = 0
        # On the clusters, each slot keeps the node it was placed on.
        self._nodes = {}

    def start(self, slot, script):
        """Start ``script`` in ``slot`` (a name such as ``worker-1``)."""
        self._starts += 1
        env = None
        if slot in SKEWED_CLOCKS:
            env = {clock.SKEW_VARIABLE: str(SKEWED_CLOCKS[slot])}
        node = self._nodes.setdefault(slot, len(self._nodes))
        daemon = self.deployment.start(script, '%s.%d' % (slot,
                                                          self._starts),
                                       env=env, node=node)
        self.slots[slot] = daemon
        return daemon

    def node_of(self, slot):
        """The cluster node (from 0) ``slot``'s daemon runs on."""
        return self._nodes[slot] % len(self.deployment.nodes)

    def start_all(self):
        """Start every daemon and wait until they serve."""
        for i in range(WORKER_DAEMONS):
            self.start('worker-%d' % i, 'barbican-worker')
        for i in range(RETRY_DAEMONS):
            self.start('retry-%d' % i, 'barbican-retry')
        for slot, daemon in self.slots.items():
            daemon.wait_for_log('serving topic' if slot.startswith('worker')
                                else 'Retry scheduler started')

    def kill_one(self, rng):
        """SIGKILL a random process; start killed launchers again.

        A killed worker child is replaced by its launcher; a killed launcher
        (or barbican-retry, which is one process) is started again here.
        """
        slot = rng.choice(sorted(self.slots))
        daemon = self.slots[slot]
        children = daemon.children()
        if children and rng.random() < 0.6:
            os.kill(rng.choice(children), signal.SIGKILL)
            return
        daemon.kill()
        self.start(slot, daemon.script)

    def restart_exited(self, log):
        """Start again each daemon that exited on its own, as systemd's
        ``Restart=on-failure`` does (``etc/systemd/``): a daemon that
        starts while the database is down exits, and a run must not be
        left without it."""
        for slot, daemon in sorted(self.slots.items()):
            if daemon.process is not None and \
                    daemon.process.poll() is not None:
                log('chaos: %s exited (status %d); started again'
                    % (slot, daemon.process.returncode))
                self.start(slot, daemon.script)

    def stop_all(self):
        """SIGTERM everything; a clean stop removes its service row."""
        for daemon in self.slots.values():
            try:
                daemon.stop(timeout=60)
            except AssertionError:
                pass

    def worker_logs(self):
        """Return the text of every worker log of the run."""
        texts = []
        for daemon in self.deployment.daemons:
            if daemon.script == 'barbican-worker':
                texts.append(daemon.log())
        return texts


# Kinds of orders: the metadata the recorded types read.
_RETRYING = '{"unavailable_attempts": 1}'      # R-2 once, then fine
_FAILING = '{"unavailable_attempts": 99}'      # ERROR after the retries
# A first run that hangs past its lease (6 s): taken back from a live
# worker and run again; the hung run's result, when it comes, is stale.
_HUNG = '{"hold_seconds": 15}'
# Poison: the step kills its own worker process (SIGKILL) on every run;
# it must end ERROR after [worker] max_step_crashes deaths, and the pool
# serve on.
_POISON = '{"kill_worker": true}'
_KINDS = {
    'certificate': (
        '{}',
        _RETRYING,
        '{"hold_seconds": 2}',                 # a long first step
    ),
    'fanout': (
        '{"polls": 2}',                        # R-1 twice
        _RETRYING,
        '{"hold_seconds": 2}',                 # a long issue step
        '{"hold_seconds": 2, "hold_step": "check_caa"}',  # one of three
    ),
}


def _waves(count, duration, order_type):
    """Split the orders into waves created while the faults go on:
    ``[(size, meta, type name or None for the run's type), ...]``.

    Orders keep arriving during the faults, so that kills and restarts
    hit work in flight. Two small waves are meant to end in ERROR: one
    whose remote side stays down, and a few poison orders. Two are of
    ``LIMITED_TYPE``, one per key, created early and midway.
    """
    failing = hung = max(1, count // 50)
    poison = max(1, count // 100)
    # Enough per key that runs contend for its slots.
    limited = max(5, count // 20)
    rest = count - failing - hung - poison - limited * len(LIMITED_KEYS)
    number = max(3, min(rest, duration // 6))
    kinds = _KINDS[order_type]
    waves = [(failing, _FAILING, None), (hung, _HUNG, None),
             (poison, _POISON, None)]
    for i in range(number):
        size = rest // number + (1 if i < rest % number else 0)
        if size:
            waves.append((size, kinds[i % len(kinds)], None))
    for place, key in zip((3, len(waves) // 2 + 1), LIMITED_KEYS):
        waves.insert(place, (limited, '{"key": "%s"}' % key, LIMITED_TYPE))
    return waves


class _Orders:
    """The orders created so far, and those meant to end in ERROR."""

    def __init__(self, deployment, waves, type_name, callback_url):
        self._deployment = deployment
        self._callback_url = callback_url
        self._type_name = type_name
        self._waves = list(waves)
        self.ids = []
        #: Orders created with the callback URL: every other wave. The
        #: results of the others need no event, so a worker writes them
        #: with a batch's plan (``worker.steps.writes``), and a run covers
        #: both ways a result is written.
        self.subscribed = []
        self.meant_to_fail = set()
        #: Orders whose first run hangs past its lease.
        self.hung = 0
        #: Orders whose step kills its worker on every run.
        self.poison = []
        #: Orders of ``LIMITED_TYPE``.
        self.limited = 0
        #: ``order create`` calls that hung past their timeout.
        self.create_timeouts = 0
        self._held_back = []

    def create_next_wave(self):
        """Create the next wave, if any is left.

        Like a client of an API whose database is restarting, it tries
        again: a failed ``order create`` committed nothing (its casts may
        fail without failing it).
        """
        if not self._waves:
            return
        size, meta, type_name = self._waves.pop(0)
        subscribed = len(self._waves) % 2 == 0
        callback = ['--callback-url', self._callback_url] if subscribed else []
        for _ in range(60):
            try:
                created = self._deployment.manage_json(
                    'order', 'create', '--type', type_name or self._type_name,
                    '--count',
                    str(size), '--meta', meta, *callback)
                break
            except subprocess.CalledProcessError:
                time.sleep(1)
            except subprocess.TimeoutExpired:
                # Hung for manage()'s 120 s (seen with its broker node
                # cut off from its peers): counted, and tried again. What
                # it may have committed is not among the run's orders.
                self.create_timeouts += 1
        else:
            raise RuntimeError('could not create orders for a minute')
        ids = [order['id'] for order in created]
        self.ids += ids
        if subscribed:
            self.subscribed += ids
        if meta in (_FAILING, _POISON):
            self.meant_to_fail.update(ids)
        if meta == _POISON:
            self.poison += ids
        if meta == _HUNG:
            self.hung += len(ids)
        if type_name == LIMITED_TYPE:
            self.limited += len(ids)

    def waves_left(self):
        """How many waves are still to be created."""
        return len(self._waves)

    def hold_back(self, count):
        """Keep the last ``count`` waves (of the run's own type) out of
        ``create_next_wave``, for ``create_held_back``."""
        self._held_back = [self._waves.pop() for _ in range(count)]

    def create_held_back(self):
        """Create one of the waves held back, if any is left."""
        if self._held_back:
            self._waves.insert(0, self._held_back.pop())
            self.create_next_wave()


def _pending(database):
    """Orders not finished, and deliveries of events not finished."""
    with database.session() as session:
        counts = orders.count_by_status(session)
        deliveries = database.repositories.notifications \
            .count_open_deliveries(session)
    return counts.get(models.PENDING, 0) + counts.get(models.CANCELLING, 0) \
        + sum(deliveries.values())


def run(db, order_count, duration, workdir, services, seed=None,
        recovery_timeout=300, log=print, order_type='certificate',
        queues='classic', clusters=None, network=(), quorum_seconds=0):
    """Run the scenario with orders of ``order_type`` (a key of
    ``ORDER_TYPES``) over ``queues`` (a key of ``QUEUES``); returns a
    Report.

    ``clusters``: a ``services.Clusters`` to run on (``db`` must then be
    ``mysql``), with node faults instead of server restarts; every process
    connects to Galera through HAProxy (but with ``network``).
    ``quorum_seconds``: on the clusters, each loses its quorum for that
    long too (0: never).
    ``network``: names of ``network.ALL``, the network faults to inject
    instead of the node faults, one at a time; ``clusters`` must then be
    started with ``network``. The run's fault time is stretched to hold
    them all. The processes in the namespaces connect to their own Galera
    node: HAProxy listens on the runner's loopback, which they do not
    reach, and the partitions are rules on the nodes' addresses.
    """
    rng = random.Random(seed)
    report = Report(db='galera' if clusters else db, orders=order_count,
                    order_type=order_type, queues=queues)
    server = clusters.server_url if clusters else None
    database_url = databases.create(db, _Path(workdir), server=server)
    # On the clusters the processes, and this one, go through HAProxy.
    used_url = clusters.through_haproxy(database_url) if clusters else \
        database_url
    database = db_session.Database.from_url(used_url)
    migration.upgrade(database.engine)
    options = dict(OPTIONS, **QUEUES[queues])
    runner_address = '127.0.0.1'
    if network:
        # The processes in the namespaces notify the runner through its
        # address on their bridge.
        runner_address = clusters.runner_address
        options['notifications'] = dict(options['notifications'],
                                        allowed_hosts=runner_address)
        duration = max(duration, network_faults.plan_seconds(network))
    if clusters:
        options['DEFAULT'] = CLUSTER_DEFAULTS
    if clusters:
        deployment = processes.Deployment(
            workdir, used_url if not network else database_url,
            clusters.transport_url(), options,
            nodes=clusters.nodes(database_url, haproxy=not network),
            namespaces=clusters.host_namespaces)
    else:
        deployment = processes.Deployment(workdir, database_url,
                                          services.transport_url, options)
    cluster = Cluster(deployment)
    receiver = receivers.Receiver(OPTIONS['notifications']['secret'],
                                  host=runner_address)
    watching = []
    try:
        receiver.start()
        if clusters:
            watching = [probes.WriteProbe(used_url).start(),
                        probes.ProgressProbe(used_url).start()]
        cluster.start_all()
        created = _Orders(deployment,
                          _waves(order_count, duration, order_type),
                          ORDER_TYPES[order_type], receiver.url)
        log('chaos: %d %s orders in waves, faults for %ds'
            % (order_count, order_type, duration))
        if network:
            faults = network_faults.NetworkFaults(
                clusters, cluster, database, network, rng, log)
        elif clusters:
            if quorum_seconds:
                # Orders created just before each loss of quorum: work in
                # flight when it goes, which must complete once it is back.
                created.hold_back(len(_NodeFaults.QUORUM_PLAN))
            faults = _NodeFaults(clusters, duration, rng, report, log,
                                 quorum_seconds, created.create_held_back)
        else:
            faults = _ServerFaults(services, db, duration, report, log)
        _inject_faults(cluster, faults, duration, rng, report, log,
                       created, receiver)
        if network:
            faults.finish()
            report.network_faults = [fault.summary()
                                     for fault in faults.faults]
        faults_over = time.monotonic()
        deadline = faults_over + recovery_timeout
        while time.monotonic() < deadline and _pending(database):
            cluster.restart_exited(log)
            time.sleep(0.5)
        report.recovery_s = time.monotonic() - faults_over
        for probe in watching:
            probe.stop()
        if clusters and not network:
            report.fault_times = faults.timings(*watching)
        # Room for the passes to clear the rows of the last killed process.
        time.sleep(options['DEFAULT']['service_down_time'] + 3)
        cluster.stop_all()
        _check(report, cluster, deployment, database, created)
        report.subscribed = len(created.subscribed)
        report.create_timeouts = created.create_timeouts
        report.events, report.event_gaps = checks.notifications(
            database, receiver, created.subscribed,
            set(created.ids) - set(created.subscribed))
    finally:
        for probe in watching:
            probe.stop()
        receiver.stop()
        deployment.kill_all()
        database.dispose()
        if report.ok:
            databases.drop(db, database_url, server=server)
        else:
            # Kept for a post-mortem, in the work directory's servers.
            log('chaos: database kept: %s' % database_url)
    return report


def _check(report, cluster, deployment, database, created):
    """Fill the report's counts from the logs and the database."""
    report.hung_calls = created.hung
    report.limited = created.limited
    most = checks.most_at_once(deployment.plugin_log)
    capacity = OPTIONS['resource:chaos']['capacity']
    report.most_at_once = max(most.values(), default=0)
    report.capacity_exceeded = sum(1 for seen in most.values()
                                   if seen > capacity)
    report.poison = len(created.poison)
    report.poison_uncontained = checks.uncontained_poison(
        database, created.poison, OPTIONS['worker']['max_step_crashes'])
    changes = checks.state_changes(cluster.worker_logs())
    runs = checks.recorded_runs(deployment.plugin_log)
    report.double_terminal = checks.double_terminal(changes)
    report.stale_effects = checks.stale_effects(
        runs, changes, checks.final_steps(database))
    if report.order_type == 'fanout':
        report.keys = checks.idempotency_keys(runs)
    (report.terminal, report.stuck, lost,
     report.leftovers) = checks.database_counts(
         database, created.ids, created.meant_to_fail)
    report.lost = len(lost)
    # Why the orders that failed unexpectedly did, for the post-mortem.
    for order_id, reason in sorted(checks.error_reasons(
            database, lost).items())[:5]:
        report.unexpected_errors.append('%s: %s' % (order_id, reason))


class _ServerFaults:
    """Restarts of the single broker and database servers, each once."""

    def __init__(self, services, db, duration, report, log):
        start = time.monotonic()
        self._services = services
        self._report = report
        self._log = log
        self._db = db
        # The broker restarted, then killed (SIGKILL, no clean stop)
        # while orders are drained, then the database restarted.
        self._due = [(start + duration / 4, self._restart_broker),
                     (start + duration / 2, self._kill_broker)]
        if db != 'sqlite':
            self._due.append((start + 3 * duration / 4,
                              self._restart_database))

    def inject_due(self, now):
        """Inject the faults whose time has come."""
        while self._due and now >= self._due[0][0]:
            self._due.pop(0)[1]()

    def _restart_broker(self):
        self._log('chaos: restarting RabbitMQ')
        self._services.restart('rabbitmq', 5, time.sleep)
        self._report.broker_restarts += 1

    def _kill_broker(self):
        self._log('chaos: killing RabbitMQ (SIGKILL)')
        self._services.kill('rabbitmq', 3, time.sleep)
        self._report.broker_kills += 1

    def _restart_database(self):
        self._log('chaos: restarting %s' % self._db)
        self._services.restart(self._db, 5, time.sleep)
        self._report.db_restarts += 1


class _NodeFaults:
    """Kills and clean stops of cluster nodes, then losses of quorum.

    Four faults spread over the run, alternating broker and database
    nodes, each node down a few seconds and then started again; the
    cluster keeps its quorum (2 of 3) throughout, and the next fault
    waits until the node has rejoined. The Galera node killed is node 1,
    the writer behind HAProxy: its clients move to a backup.

    With ``quorum_seconds``, two more: Galera nodes 1 and another killed
    at once (a clean stop would not do: the nodes that leave cleanly take
    their votes with them, and the last one stays a primary component),
    then two brokers stopped at once (their quorum queues keep three
    members and have no majority); each down ``quorum_seconds``, then
    started again, the quorum back when the first is.
    """

    _PLAN = (('rabbitmq', 'kill'), ('galera', 'kill'),
             ('rabbitmq', 'stop'), ('galera', 'stop'))
    QUORUM_PLAN = (('galera', 'kill'), ('rabbitmq', 'stop'))
    #: Seconds after a fault in which its stall is looked for.
    _SETTLE = 15

    def __init__(self, clusters, duration, rng, report, log,
                 quorum_seconds=0, before_quorum_loss=None):
        start = time.monotonic()
        self._clusters = clusters
        self._before_quorum_loss = before_quorum_loss
        self._report = report
        self._log = log
        # Of each kind, the node killed and the node stopped differ; the
        # Galera node killed is the writer.
        numbers = {'rabbitmq': rng.sample(range(1, clusters.size + 1), 2),
                   'galera': [1, rng.randint(2, clusters.size)]}
        plan = [(kind, action, (numbers[kind][i // 2],), 5)
                for i, (kind, action) in enumerate(self._PLAN)]
        if quorum_seconds:
            # Two of three down: the writer and another Galera node, any
            # two brokers.
            down = {'galera': (1, rng.randint(2, clusters.size)),
                    'rabbitmq': tuple(rng.sample(
                        range(1, clusters.size + 1), 2))}
            plan += [(kind, action, down[kind], quorum_seconds)
                     for kind, action in self.QUORUM_PLAN]
        self._due = [(start + duration * (i + 1) / (len(plan) + 1),) + fault
                     for i, fault in enumerate(plan)]
        #: ``(name, kind, down at, quorum back at, all back at)``.
        self._done = []

    def inject_due(self, now):
        """Inject the faults whose time has come."""
        while self._due and now >= self._due[0][0]:
            _, kind, action, numbers, seconds = self._due.pop(0)
            name = '%s-%s:%s' % (kind, '+'.join(map(str, numbers)), action)
            self._log('chaos: %s node %s: %s, down %d s'
                      % (kind, ' and '.join(map(str, numbers)), action,
                         seconds))
            if len(numbers) > 1 and self._before_quorum_loss:
                self._before_quorum_loss()
            down_at = time.monotonic()
            for number in numbers:
                self._clusters.node(action, kind, number)
            time.sleep(seconds)
            self._clusters.node('start', kind, numbers[0])
            back_at = time.monotonic()
            for number in numbers[1:]:
                self._clusters.node('start', kind, number)
            self._log('chaos: %s node %s rejoined (fault over in %.0f s)'
                      % (kind, ' and '.join(map(str, numbers)),
                         time.monotonic() - down_at))
            self._done.append((name, kind, down_at, back_at,
                               time.monotonic()))
            self._report.node_faults.append(name)

    def timings(self, writes, progress):
        """A ``FaultTime`` for each fault done, from ``writes`` (a
        ``probes.WriteProbe`` through HAProxy) and ``progress`` (a
        ``probes.ProgressProbe``); a stall is looked for until a little
        after the fault's nodes were back (or the next fault)."""
        times = []
        next_down = [fault[2] for fault in self._done[1:]] + [float('inf')]
        for (name, kind, down_at, back_at, end_at), next_at in zip(
                self._done, next_down):
            until = min(end_at + self._SETTLE, next_at)
            watched = writes if kind == 'galera' else progress
            times.append(FaultTime(name, writes.stall(down_at, until),
                                   progress.stall(down_at, until),
                                   watched.resumed(back_at)))
        return times


def _inject_faults(cluster, faults, duration, rng, report, log, created,
                   receiver):
    """Kill a process every few seconds; inject ``faults`` (server
    restarts or node faults); take the receiver of notifications down for
    a fifth of the time.

    The waves of orders are created meanwhile by a thread of their own, so
    that slow order creation never spaces the faults out.
    """
    start = time.monotonic()
    creating = threading.Thread(
        target=_create_waves, args=(created, start + 0.8 * duration))
    creating.start()
    outage = _ReceiverOutage(receiver, start + 0.3 * duration,
                             start + 0.5 * duration, report, log)
    try:
        while time.monotonic() - start < duration:
            time.sleep(rng.uniform(1.0, 3.0))
            cluster.restart_exited(log)
            cluster.kill_one(rng)
            report.kills += 1
            outage.due(time.monotonic())
            faults.inject_due(time.monotonic())
            # A node fault may block past the receiver's return (a loss
            # of quorum, a minute): it must not stay down longer, its
            # port free for another program to take.
            outage.due(time.monotonic())
        outage.due(float('inf'))
        # A slow restart can run past the end: the faults still planned
        # happen now, so that every run has all of them.
        faults.inject_due(float('inf'))
    finally:
        creating.join()
        outage.end()


class _ReceiverOutage:
    """The receiver of notifications down from ``down_at`` to ``up_at``
    (monotonic), once."""

    def __init__(self, receiver, down_at, up_at, report, log):
        self._receiver = receiver
        self._down_at = down_at
        self._up_at = up_at
        self._report = report
        self._log = log

    def due(self, now):
        """Take the receiver down, or bring it back, if it is time."""
        if self._down_at is not None and now >= self._down_at:
            self._log('chaos: the receiver of notifications goes down')
            self._receiver.stop()
            self._report.receiver_outages += 1
            self._down_at = None
        if self._down_at is None and self._up_at is not None and \
                now >= self._up_at:
            self.end()

    def end(self):
        """Bring the receiver back if it is down."""
        if self._down_at is None and self._up_at is not None:
            self._log('chaos: the receiver of notifications is back')
            self._receiver.start()
            self._up_at = None


def _create_waves(created, until):
    """Create the waves evenly until ``until`` (monotonic), then the rest."""
    while created.waves_left():
        created.create_next_wave()
        left = created.waves_left()
        if left:
            time.sleep(max(0.0, (until - time.monotonic()) / left))


class _Path(str):
    """What ``databases.create`` expects of a directory: ``/`` joins."""

    def __truediv__(self, name):
        return os.path.join(self, name)
