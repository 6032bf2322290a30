"""One pass of the retry scheduler: ``RetryManager.run_once(now)``.

A pass first looks, in one read-only transaction, whether it has anything
to do: a due row, a lock to judge, or recovery to run. A pass with nothing
to do plans its next pass in that same transaction and ends there; the only
write it may make is the daemon's pass record, once per ``report_interval``
(``scheduler.planner``). Otherwise it takes the pass lock
(``scheduler.pass_lock``), takes back lost steps (``scheduler.recovery``),
casts the due rows and deletes what it cast (``scheduler.dispatch``), and
releases the lock. Last it plans its next pass (``scheduler.planner``):
the timer only waits for what ``run_once`` returns.
"""

import dataclasses
import datetime
import enum
import random
import threading
import time

from oslo_log import log as logging

from scheduler import dispatch
from scheduler import lateness as lateness_stats
from scheduler import liveness
from scheduler import pass_lock
from scheduler import planner
from scheduler import recovery

LOG = logging.getLogger(__name__)


class Outlook(enum.Enum):
    """What a read-only look says a pass has to do."""

    #: Nothing due, nothing lost, no lock.
    IDLE = 'idle'
    #: A lock too young to be stale: its holder is on it.
    HELD = 'lock held'
    #: A lock to judge, and clear if stale.
    OLD_LOCK = 'lock to judge'
    #: Rows due or steps lost.
    WORK = 'work'


# Outlooks after which a pass only reads.
_NOTHING_TO_DO = (Outlook.IDLE, Outlook.HELD)


@dataclasses.dataclass
class PassResult:
    """What one pass did, and when the next one is due."""

    idle: bool = False
    locked: bool = False
    stale_lock_cleared: bool = False
    recovered: int = 0
    dead_services: list = dataclasses.field(default_factory=list)
    dispatched: int = 0
    parked: int = 0
    cast_failures: int = 0
    lock_lost: bool = False
    lateness: lateness_stats.LatenessTracker = dataclasses.field(
        default_factory=lateness_stats.LatenessTracker)
    #: Seconds the pass ran.
    duration: float = 0.0
    #: Seconds from the end of the pass to the next one.
    next_pass_in: float = 0.0
    #: Rows due and not cast at the end of a pass that took the lock, when
    #: the manager measures it (metrics enabled); None otherwise.
    backlog: int | None = None


class RetryManager:
    """Runs passes of the retry scheduler.

    :param worker_api: a ``worker.rpcapi.WorkerAPI`` (or a fake with the
        same ``parse_retry``, ``topic`` and ``run_steps``).
    :param stop_event: set it to make a running pass stop after its
        current batch.
    :param observe_lateness: called with each cast's lateness in seconds
        (a metrics histogram), or None.
    :param holder_name: this daemon's service name (``pid@host``): it is
        recorded in the lock row and ranks the daemon among the live ones;
        ``[DEFAULT] host`` by default.
    :param measure_backlog: count the rows left due after each pass that
        took the lock (``PassResult.backlog``), for the metrics.
    :param randomness: a ``worker.common.randomness.Uniform``, which
        spreads the dispatch of crashed steps (``scheduler.recovery``).
    :param clock_trusted: returns False while this daemon's clock is off
        by more than ``[DEFAULT] max_clock_offset_seconds``: its passes
        then cast due rows but take back no step and clear no lock, since
        both judge others by their timestamps (``worker.common.clock``).
        For the same reason a daemon whose pass failed (the database
        away) judges no one until ``[DEFAULT] service_down_time`` after
        that failure (``liveness.sees_long_enough``).
    """

    def __init__(self, conf, database, worker_api, stop_event=None,
                 observe_lateness=None, holder_name=None,
                 measure_backlog=False, clock_trusted=lambda: True,
                 randomness=random):
        name = holder_name or conf.host
        self._conf = conf
        self._clock_trusted = clock_trusted
        self._database = database
        self._observe_lateness = observe_lateness
        self._measure_backlog = measure_backlog
        self._lock = pass_lock.PassLock(database, name)
        self._recovery = recovery.Recovery(conf, database, self._lock,
                                           randomness)
        self._dispatcher = dispatch.Dispatcher(
            conf, database, worker_api, self._lock,
            stop_event or threading.Event())
        self._planner = planner.Planner(conf, database, name)
        #: ``now`` of the last pass that failed, None if none did.
        self._failed_at = None

    def run_once(self, now):
        """Run one pass as of ``now`` (naive UTC); returns a PassResult.

        A pass with nothing to do (or whose lock is held by a daemon on
        it) plans its next pass in the same read-only transaction as its
        look; one that worked plans it after its work, and after its log
        line, which a failure to plan cannot take away.
        """
        try:
            return self._run_once(now)
        except Exception:
            self._failed_at = now
            raise

    def _run_once(self, now):
        started = time.monotonic()
        cutoffs = liveness.Cutoffs.at(now, self._conf)
        result = PassResult(
            lateness=lateness_stats.LatenessTracker(self._observe_lateness))
        with self._database.reader() as session, session.begin():
            outlook, recover = self._look(session, cutoffs)
            quiet = outlook in _NOTHING_TO_DO
            if quiet:
                result.duration = time.monotonic() - started
                next_pass = self._planner.plan(session, cutoffs,
                                               result.duration)
        result.idle = outlook is Outlook.IDLE
        if not quiet:
            self._work(outlook, recover, cutoffs, started, result)
            result.duration = time.monotonic() - started
        self._log(result)
        if not quiet:
            next_pass = self._plan_after_work(cutoffs, result)
        result.next_pass_in = next_pass.delay
        ended = cutoffs.now + datetime.timedelta(seconds=result.duration)
        self._planner.record(next_pass, result.locked, cutoffs.now, ended)
        return result

    def first_delay(self, now):
        """Seconds to the first pass (at start, on reload)."""
        return self._planner.first_delay(now)

    def _look(self, session, cutoffs):
        """Tell, reading only, what this pass has to do.

        Returns ``(outlook, recover)``; ``recover`` says whether the pass
        must take lost orders back.
        """
        judges = self._clock_trusted() and liveness.sees_long_enough(
            cutoffs.now, self._failed_at, self._conf.service_down_time)
        lock = self._lock.glance(session, cutoffs)
        if lock is pass_lock.Glance.FRESH:
            return Outlook.HELD, judges and self._recovery.due(cutoffs.now)
        if lock is pass_lock.Glance.OLD:
            if not judges:
                # Old by a clock that is off: not ours to clear.
                return Outlook.HELD, False
            # Judged, and maybe cleared, under a write transaction.
            return Outlook.OLD_LOCK, self._recovery.due(cutoffs.now)
        if judges and self._recovery.needed(session, cutoffs):
            return Outlook.WORK, True
        if self._database.repositories.retry_tasks.any_due(
                session, cutoffs.now):
            return Outlook.WORK, False
        return Outlook.IDLE, False

    def _work(self, outlook, recover, cutoffs, started, result):
        """Judge an old lock; take the lock, recover, dispatch, release."""
        if outlook is Outlook.OLD_LOCK:
            result.stale_lock_cleared = self._lock.clear_if_stale(cutoffs)
        owner_token = self._lock.acquire(cutoffs.now)
        if owner_token is None:
            return
        result.locked = True
        try:
            if recover:
                recovered = self._recovery.run(owner_token, cutoffs)
                if recovered is None:
                    result.lock_lost = True
                    return
                result.recovered = recovered.steps
                result.dead_services = list(recovered.dead_services)
            self._dispatcher.run(owner_token, cutoffs.now, started, result)
        finally:
            self._lock.release(owner_token)

    def _plan_after_work(self, cutoffs, result):
        """Plan the next pass once the work is done; count the backlog."""
        with self._database.reader() as session, session.begin():
            next_pass = self._planner.plan(session, cutoffs, result.duration)
            if self._measure_backlog and result.locked:
                result.backlog = \
                    self._database.repositories.retry_tasks.count_due(
                        session, cutoffs.now + datetime.timedelta(
                            seconds=result.duration))
        return next_pass

    @staticmethod
    def _log(result):
        if not (result.idle or result.locked):
            LOG.debug('OrderRetryTask lock held by another process; '
                      'skipping this pass')
            return
        # The "found nothing due" line's format is read by the benchmark.
        if not (result.dispatched or result.parked or
                result.cast_failures or result.recovered):
            LOG.debug('Pass found nothing due (%.3fs)', result.duration)
            return
        p99 = result.lateness.p99()
        LOG.info('Pass dispatched %d retries, set aside %d, %d casts failed, '
                 'recovered %d lost orders, in %.3fs; lateness p99 %.1fs',
                 result.dispatched, result.parked, result.cast_failures,
                 result.recovered, result.duration, p99)
