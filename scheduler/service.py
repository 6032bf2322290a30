"""barbican-retry's service: the timer around ``RetryManager.run_once``."""

import datetime
import random
import threading
import time

from oslo_log import log as logging
from oslo_service import service
from oslo_utils import timeutils

from scheduler import manager
from scheduler import metrics as scheduler_metrics
from scheduler import slots
from worker.db import retry_tasks
from worker.db import services
from worker.db import session as db_session
from worker import heartbeat
from worker import liveness
from worker import oslo_service_backend
from worker import metrics as worker_metrics
from worker import rpc
from worker import rpcapi

LOG = logging.getLogger(__name__)

# The kind of this daemon's row in ``services``.
KIND = 'scheduler'
_EPOCH = datetime.datetime(1970, 1, 1)


class SchedulerService(service.Service):
    """Runs a retry pass every ``[scheduler] schedule_period_seconds``.

    The live daemons share the period: each passes in its own slot (see
    ``scheduler.slots``), so that K of them pass every period / K; and
    sooner when a waiting row falls due before the slot. A pass that
    raises is logged and the timer goes on. ``stop()`` lets a running pass
    finish its current batch and release the lock.

    :param transport: an existing transport to share (the all-in-one demo
        passes its in-process one); by default one is built in ``start()``.
    """

    def __init__(self, conf, transport=None, clock=timeutils.utcnow):
        super().__init__()
        self._conf = conf
        self._shared_transport = transport
        self._clock = clock
        self._stopping = threading.Event()
        self._pass_lock = threading.Lock()
        self._database = None
        self._transport = None
        self._manager = None
        self._heartbeat = None
        self._metrics = None
        self._timer = None
        self._recorded_at = None

    def start(self):
        """Connect to the database and the broker, then start the timer."""
        oslo_service_backend.require_threading()
        super().start()
        self._stopping.clear()
        self._database = db_session.Database.from_conf(self._conf)
        self._heartbeat = heartbeat.Heartbeat(self._database, KIND,
                                              self._conf.host)
        self._heartbeat.start(self.tg, self._conf.report_interval)
        self._transport = (self._shared_transport or
                           rpc.get_transport(self._conf))
        worker_api = rpcapi.WorkerAPI.from_transport(
            self._transport, self._conf.worker.topic)
        observe_lateness = None
        if self._conf.metrics.enabled:
            self._metrics = scheduler_metrics.SchedulerMetrics()
            worker_metrics.serve(self._conf, self._metrics.registry,
                                 self._conf.metrics.scheduler_port)
            observe_lateness = self._metrics.lateness.observe
        self._manager = manager.RetryManager(
            self._conf, self._database, worker_api,
            stop_event=self._stopping, observe_lateness=observe_lateness,
            holder_name=self._heartbeat.name)
        self._start_timer('Retry scheduler started')

    def reload(self, conf):
        """Re-read the configuration files and plan the next pass anew.

        Between passes: a pass under way finishes first, with the values it
        started with.
        """
        with self._pass_lock:
            conf.mutate_config_files()
            self.reset()

    def reset(self):
        """Plan the next pass from the (reloaded) options."""
        if self._timer is not None:
            self._timer.stop()
            self.tg.timer_done(self._timer)
            self._start_timer('Configuration reloaded')

    def _start_timer(self, what):
        group = self._conf.scheduler
        initial = self._plan_next_pass()
        self._timer = self.tg.add_dynamic_timer_args(
            self._periodic_pass, initial_delay=initial,
            stop_on_exception=False)
        LOG.info('%s: period %ds, jitter %.0f%%, next pass in %.1fs', what,
                 group.schedule_period_seconds, 100 * group.schedule_jitter,
                 initial)

    def _periodic_pass(self):
        """Run a pass; return the wait before the next one."""
        with self._pass_lock:
            try:
                if not self._stopping.is_set():
                    return self._run_pass()
            except Exception:
                if self._metrics is not None:
                    self._metrics.record_failure()
                LOG.exception('Retry pass failed; the next one runs as '
                              'scheduled')
        return self._conf.scheduler.schedule_period_seconds

    def _run_pass(self):
        now = self._clock()
        started = time.monotonic()
        result = self._manager.run_once(now)
        duration = time.monotonic() - started
        with self._database.reader() as session, session.begin():
            delay = self._delay_to_next_pass(session, now, duration)
            backlog = (retry_tasks.count_due(session, self._clock())
                       if self._metrics is not None and result.locked
                       else None)
        self._record_pass(result, now, delay)
        if self._metrics is not None:
            self._metrics.record_pass(result, duration, backlog)
        return delay

    def _record_pass(self, result, started, delay):
        """Write when this daemon passed and will pass, for operators.

        After a pass that did work, and otherwise once per
        report_interval: an idle pass stays a read.
        """
        now = self._clock()
        interval = datetime.timedelta(seconds=self._conf.report_interval)
        if not result.locked and self._recorded_at is not None and \
                self._recorded_at <= now < self._recorded_at + interval:
            return
        with self._database.session() as session, session.begin():
            # "retry explain" tells when the next pass is.
            services.record_pass(session, self._heartbeat.name, started,
                                 now + datetime.timedelta(seconds=delay))
        self._recorded_at = now

    def _plan_next_pass(self):
        """Seconds to the next pass, planned outside a pass (at start, on
        reload)."""
        now = self._clock()
        try:
            with self._database.reader() as session, session.begin():
                return self._delay_to_next_pass(session, now)
        except Exception as exc:
            # Without the database there is nothing to pass over either.
            LOG.warning('Could not plan the next pass (%s); it comes at a '
                        'random point of the period', exc)
            return random.uniform(
                0, self._conf.scheduler.schedule_period_seconds)

    def _delay_to_next_pass(self, session, started, elapsed=None):
        """Seconds to this daemon's next pass.

        Its slot of the period (see ``scheduler.slots``), or sooner when a
        row waiting now falls due before it; but not sooner than
        ``min_pass_gap_seconds`` after the start of the pass that just ran.

        :param started: when the pass that just ran started, or the present
            when none did (``elapsed`` None).
        :param elapsed: seconds that pass ran.
        """
        group = self._conf.scheduler
        rank, count = slots.rank_of(self._heartbeat.name,
                                    self._live_schedulers(session, started))
        delay = slots.delay_to_slot(
            timeutils.delta_seconds(_EPOCH, started),
            group.schedule_period_seconds, rank, count, group.schedule_jitter,
            elapsed=elapsed or 0.0)
        # Rows due before ``started`` and left over by the pass (a failed
        # cast, max_pass_seconds) wait for the slot.
        upcoming = retry_tasks.next_due_after(session, started)
        if upcoming is None:
            return delay
        if elapsed is not None:
            upcoming = max(upcoming, started + datetime.timedelta(
                seconds=group.min_pass_gap_seconds))
        wake = (upcoming - started).total_seconds() - (elapsed or 0.0)
        return min(delay, max(0.0, wake))

    def _live_schedulers(self, session, now):
        return services.live_names(
            session, liveness.alive_since(now, self._conf.service_down_time),
            kind=KIND)

    def run_pass_now(self):
        """Run one pass at once (used by the demo and tests)."""
        return self._periodic_pass()

    def stop(self, graceful=True):
        """Finish or abandon the running pass, release the lock, stop."""
        self._stopping.set()
        # Waits for a running pass: it stops after its current batch and
        # releases the lock in its own ``finally``.
        with self._pass_lock:
            pass
        super().stop(graceful)
        if self._heartbeat is not None:
            self._heartbeat.remove()
        if self._transport is not None and not self._shared_transport:
            self._transport.cleanup()
        self._transport = None
        if self._database is not None:
            self._database.dispose()
        LOG.info('Retry scheduler stopped')
