"""The network faults of ``python -m tests.chaos --cluster --network``.

On clusters started with ``cluster.sh start DIR --network`` (every node,
and the host of each node's processes, in a network namespace of its
own: tests/functional/netns.sh), a thread of its own injects the faults
one at a time while the run kills processes: each is applied, held,
undone, and the clusters are let settle (both whole again) before the
next. Meanwhile a sampler counts the finished orders twice a second, from
which each fault's stall (the longest time without an order finishing,
from the fault to 20 s after its end) and recovery (from its end to the
first order finished after it) are read.
"""

import dataclasses
import threading
import time

from tests.chaos import services as chaos_services
from worker.db import locks
from worker.db import models
from worker.db import orders

#: Seconds each fault is held: beyond the lease it is about
#: (run.OPTIONS: a step's lease 6 s, service_down_time 3 s, the pass
#: lock's retry_lock_timeout_seconds 20 s; RabbitMQ's net_ticktime 60 s,
#: Galera's evs.inactive_timeout 15 s).
HOLD = {
    'worker-db-cut': 12,
    'retry-lock-db-cut': 30,
    'galera-peers-cut': 30,
    'rabbitmq-peers-cut': 75,
    'db-link-slow': 60,
}
#: Every fault, in the order a run injects them.
ALL = tuple(HOLD)
#: The faults after which the run waits until both clusters are whole
#: (``cluster.sh settle``: the time includes its rabbitmqctl calls).
SETTLE = ('galera-peers-cut', 'rabbitmq-peers-cut')
#: The slow link's delay (ms, each way) and loss (percent, each way).
SLOW_DELAY_MS = 200
SLOW_LOSS_PERCENT = 1
#: Seconds between one fault's settling and the next fault, and after the
#: end of a fault within which its stall is measured.
GAP = 8
AFTER = 20


@dataclasses.dataclass
class Fault:
    """One fault of a run, and what it did."""

    name: str
    hold: float
    #: What was cut or slowed (``host3 | galera``).
    target: str = ''
    started: float = 0.0
    ended: float = 0.0
    settled: float = 0.0
    stall_s: float | None = None
    recovery_s: float | None = None
    note: str = ''

    def summary(self):
        """``name(target, held 20s, stall 4.1s, recovery 0.6s)``."""
        parts = [self.target, 'held %ds' % self.hold]
        if self.stall_s is not None:
            parts.append('stall %.1fs' % self.stall_s)
        if self.recovery_s is not None:
            parts.append('recovery %.1fs' % self.recovery_s)
        if self.settled:
            parts.append('whole %.1fs after' % (self.settled - self.ended))
        if self.note:
            parts.append(self.note)
        return '%s(%s)' % (self.name, ', '.join(parts))


def plan_seconds(names):
    """About how long the faults ``names`` take, settling included."""
    return sum(HOLD[name] + GAP + 10 for name in names)


class Progress:
    """Samples ``(monotonic, finished orders)`` until stopped."""

    def __init__(self, database, period=0.5):
        self._database = database
        self._period = period
        self._stop = threading.Event()
        self.samples = []
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        """Start sampling."""
        self._thread.start()

    def stop(self):
        """Stop sampling (bounded: one query)."""
        self._stop.set()
        self._thread.join(60)

    def _run(self):
        while not self._stop.wait(self._period):
            try:
                with self._database.session() as session:
                    counts = orders.count_by_status(session)
            # A node restarting or cut off: no sample this time.
            except Exception:  # noqa: BLE001
                continue
            finished = sum(counts.get(status, 0)
                           for status in models.TERMINAL_STATUSES)
            pending = sum(counts.values()) - finished
            self.samples.append((time.monotonic(), finished, pending))

    def stall(self, start, end):
        """The longest time in ``[start, end]`` without an order finishing
        while some were pending (None without samples)."""
        window = [s for s in self.samples if start <= s[0] <= end]
        if not window:
            return None
        marks = [start]
        previous = window[0][1]
        for at, finished, pending in window:
            if finished > previous:
                marks.append(at)
            previous = finished
            if not pending:
                end = min(end, at)
                break
        marks.append(end)
        return max(b - a for a, b in zip(marks, marks[1:]))

    def first_finish_after(self, start):
        """Seconds from ``start`` to the first order finished after it,
        or None if none finished (or none was pending)."""
        before = None
        for at, finished, pending in self.samples:
            if at < start:
                before = finished
            elif before is not None and finished > before:
                return at - start
            elif before is not None and not pending:
                return None
        return None


class NetworkFaults:
    """The faults ``names`` (of ``ALL``), one at a time, in a thread.

    ``cluster``: the run's ``run.Cluster`` (where each daemon runs);
    ``clusters``: a ``services.Clusters`` started with ``network``.
    """

    def __init__(self, clusters, cluster, database, names, rng, log):
        self._clusters = clusters
        self._cluster = cluster
        self._database = database
        self._rng = rng
        self._log = log
        self.faults = [Fault(name, HOLD[name]) for name in names]
        self.progress = Progress(database)
        self.error = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._started = False

    def inject_due(self, now):
        """Start the faults at the first call; at ``inf`` (the end of the
        run's fault time) wait until they are all done."""
        if not self._started:
            self._started = True
            self.progress.start()
            self._thread.start()
        if now == float('inf'):
            self._thread.join(plan_seconds(HOLD) + 600)

    def finish(self):
        """Stop sampling; measure each fault's stall and recovery."""
        self.progress.stop()
        for fault in self.faults:
            if fault.ended:
                fault.stall_s = self.progress.stall(fault.started,
                                                    fault.ended + AFTER)
                fault.recovery_s = self.progress.first_finish_after(
                    fault.ended)
        if self.error is not None:
            raise self.error

    def _run(self):
        try:
            for fault in self.faults:
                time.sleep(GAP)
                self._inject(fault)
        except Exception as exc:  # noqa: BLE001
            # Raised in the run's thread by finish().
            self.error = exc
            self._clusters.network('heal')
            self._clusters.network('restore')

    def _inject(self, fault):
        apply, undo = getattr(self, '_' + fault.name.replace('-', '_'))(
            fault)
        self._log('chaos: network fault %s: %s for %ds'
                  % (fault.name, fault.target, fault.hold))
        fault.started = time.monotonic()
        apply()
        time.sleep(fault.hold)
        undo()
        fault.ended = time.monotonic()
        if fault.name in SETTLE:
            # A node cut off rejoins its cluster before the next fault.
            said = self._clusters.network('settle')
            fault.settled = time.monotonic()
            if 'restarting it' in said:
                fault.note = 'a broker restarted: it hung rejoining'
                self._log('chaos: %s' % said.strip())
        self._log('chaos: network fault %s over%s' % (
            fault.name, ', clusters whole after %.1fs'
            % (fault.settled - fault.ended) if fault.settled else ''))

    def _cut(self, fault, side, other):
        fault.target = '%s | %s' % (side, other)
        return (lambda: self._clusters.network('partition', side, other),
                lambda: self._clusters.network('heal', side))

    def _worker_db_cut(self, fault):
        # A host with a worker and no retry daemon: the worker alone is
        # cut off from every Galera node; it still reaches its broker.
        retry_nodes = {self._cluster.node_of(slot)
                       for slot in self._cluster.slots
                       if slot.startswith('retry')}
        workers = sorted(slot for slot in self._cluster.slots
                         if slot.startswith('worker') and
                         self._cluster.node_of(slot) not in retry_nodes)
        slot = self._rng.choice(workers)
        fault.note = slot
        return self._cut(fault, 'host%d' % (self._cluster.node_of(slot) + 1),
                         'galera')

    def _retry_lock_db_cut(self, fault):
        slot = self._lock_holder()
        if slot is None:
            slot = 'retry-0'
            fault.note = 'lock not seen held: %s' % slot
        else:
            fault.note = '%s held the pass lock' % slot
        return self._cut(fault, 'host%d' % (self._cluster.node_of(slot) + 1),
                         'galera')

    def _lock_holder(self, timeout=30):
        """The slot of the retry daemon holding the pass lock, polled for
        ``timeout`` seconds (a pass holds it a moment), or None."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._database.session() as session:
                lock = locks.get(session, models.ORDER_RETRY_TASK_LOCK)
            holder = lock.worker_host_name if lock else ''
            pid = holder.partition('@')[0]
            for slot, daemon in self._cluster.slots.items():
                if slot.startswith('retry') and daemon.process and \
                        str(daemon.process.pid) == pid:
                    return slot
            time.sleep(0.05)
        return None

    def _galera_peers_cut(self, fault):
        # Not node 1: the runner counts the orders through it.
        number = self._rng.choice((2, 3))
        others = ','.join('galera%d' % n for n in (1, 2, 3) if n != number)
        return self._cut(fault, 'galera%d' % number, others)

    def _rabbitmq_peers_cut(self, fault):
        number = self._rng.choice((1, 2, 3))
        others = ','.join('rabbitmq%d' % n for n in (1, 2, 3)
                          if n != number)
        return self._cut(fault, 'rabbitmq%d' % number, others)

    def _db_link_slow(self, fault):
        fault.target = 'hosts ~ galera %dms %d%%' % (SLOW_DELAY_MS,
                                                     SLOW_LOSS_PERCENT)

        def apply():
            try:
                self._clusters.network('slow', 'hosts', 'galera',
                                       SLOW_DELAY_MS, SLOW_LOSS_PERCENT)
            except chaos_services.NetworkUnavailable:
                # No netem in this kernel: the loss alone (nft).
                fault.target = 'hosts ~ galera %d%% loss' % (
                    SLOW_LOSS_PERCENT)
                fault.note = 'no delay: the kernel has no netem'
                self._clusters.network('slow', 'hosts', 'galera', 0,
                                       SLOW_LOSS_PERCENT)
        return apply, lambda: self._clusters.network('restore')
