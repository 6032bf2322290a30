"""barbican-retry's service: the timer around ``RetryManager.run_once``."""

import threading

from oslo_log import log as logging
from oslo_service import service

from scheduler import census
from scheduler import liveness
from scheduler import manager
from scheduler import metrics as scheduler_metrics
from scheduler import retention
from scheduler import ticks
from worker.api import schedules as schedule_api
from worker.common import backend
from worker.common import clock
from worker.common import heartbeat
from worker.common import metrics_server
from worker.db import models
from worker.db import session as db_session
from worker.notifications import bus
from worker import rpc
from worker import rpcapi
from worker import tracing

LOG = logging.getLogger(__name__)


class SchedulerService(service.Service):
    """Runs a retry pass every ``[scheduler] schedule_period_seconds``.

    The live daemons share the period: each passes in its own slot (see
    ``scheduler.slots``), so that K of them pass every period / K; and
    sooner when a waiting row falls due before the slot. A pass that
    raises is logged and the timer goes on. ``stop()`` lets a running pass
    finish its current batch and release the lock.

    :param transport: an existing transport to share (the all-in-one demo
        passes its in-process one); by default one is built in ``start()``.
    :param clock: returns "now" (naive UTC); by default the database's
        time (``worker.common.clock``), measured at each heartbeat.
    """

    def __init__(self, conf, transport=None, clock=None):
        super().__init__()
        self._conf = conf
        self._shared_transport = transport
        self._clock = clock
        self._stopping = threading.Event()
        # Held while a pass runs: a reload or a stop waits for its end.
        self._passing = threading.Lock()
        # Held while a purge runs: a stop waits for its current batch.
        self._purging = threading.Lock()
        # Held while a look at the schedules runs: a stop waits for its
        # current order.
        self._ticking = threading.Lock()
        self._retention = None
        self._ticks = None
        self._database = None
        self._transport = None
        self._manager = None
        self._heartbeat = None
        self._metrics = None
        self._announcer = None
        self._census_failing = False
        self._timer = None

    def start(self):
        """Connect to the database and the broker, then start the timer."""
        backend.require_threading()
        super().start()
        self._stopping.clear()
        # Its dispatches of retry rows join their orders' traces.
        tracing.configure(self._conf, 'barbican-retry')
        self._database = db_session.Database.from_conf(self._conf)
        database_clock = clock.DatabaseClock(
            self._database, self._conf.max_clock_offset_seconds,
            judges_liveness=True)
        self._clock = self._clock or database_clock.now
        self._heartbeat = heartbeat.Heartbeat(
            self._database, models.SCHEDULER, self._conf.host,
            database_clock)
        self._heartbeat.start(self.tg, self._conf.report_interval)
        self._transport = (self._shared_transport or
                           rpc.get_transport(self._conf))
        # Each step to its order type's topic.
        worker_api = rpcapi.WorkerAPI.from_conf(self._conf, self._transport)
        observe_lateness = self._start_metrics(database_clock)
        # The orders of schedules' ticks are announced on the bus.
        self._announcer = bus.from_conf(
            self._conf, self._metrics and self._metrics.registry)
        self._manager = manager.RetryManager(
            self._conf, self._database, worker_api,
            stop_event=self._stopping, observe_lateness=observe_lateness,
            holder_name=self._heartbeat.name,
            measure_backlog=self._metrics is not None,
            clock_trusted=lambda: database_clock.trusted)
        self._retention = retention.Retention(
            self._conf, self._database, self._heartbeat.name, self._clock,
            self._stopping)
        self.tg.add_dynamic_timer_args(
            self._periodic_purge, initial_delay=self._retention.next_check(),
            stop_on_exception=False)
        self._ticks = ticks.Ticks(
            self._conf, self._database, schedule_api.ScheduleAPI(
                self._database, self._conf, worker_api, now=self._clock,
                rows_per_cast=self._conf.scheduler.rows_per_cast,
                announcer=self._announcer),
            self._stopping)
        self.tg.add_dynamic_timer_args(
            self._periodic_ticks, initial_delay=0, stop_on_exception=False)
        self._start_timer('Retry scheduler started')

    def _start_metrics(self, database_clock):
        """Export the metrics and take the census of the rows if
        ``[metrics] enabled``; what observes a dispatch's lateness, or
        None."""
        if not self._conf.metrics.enabled:
            return None
        self._metrics = scheduler_metrics.SchedulerMetrics()
        metrics_server.export_clock_offset(self._metrics.registry,
                                           database_clock)
        metrics_server.serve(self._conf, self._metrics.registry,
                             self._conf.metrics.scheduler_port)
        self.tg.add_timer_args(self._conf.report_interval,
                               self._take_census, initial_delay=0,
                               stop_on_exception=False)
        return self._metrics.lateness.observe

    def reload(self, conf):
        """Re-read the configuration files and plan the next pass anew.

        Between passes: a pass under way finishes first, with the values it
        started with.
        """
        with self._passing:
            conf.mutate_config_files()
            self.reset()

    def reset(self):
        """Plan the next pass from the (reloaded) options."""
        if self._timer is not None:
            self._timer.stop()
            self.tg.timer_done(self._timer)
            self._start_timer('Configuration reloaded')

    def _take_census(self):
        """Export what the database holds (metrics enabled only)."""
        try:
            self._metrics.record_census(census.take(
                self._database,
                liveness.Cutoffs.at(self._clock(), self._conf), self._conf))
        except Exception as exc:
            # The gauges keep their last values; a database that is away
            # fails the passes too, and they are counted and alerted on.
            if not self._census_failing:
                LOG.warning('Could not read the census for the metrics, '
                            'will retry: %s', exc)
            self._census_failing = True
            return
        if self._census_failing:
            LOG.info('Census for the metrics read again')
        self._census_failing = False

    def _start_timer(self, what):
        group = self._conf.scheduler
        if self._metrics is not None:
            self._metrics.period.set(group.schedule_period_seconds)
        initial = self._manager.first_delay(self._clock())
        self._timer = self.tg.add_dynamic_timer_args(
            self._periodic_pass, initial_delay=initial,
            stop_on_exception=False)
        LOG.info('%s: period %ds, jitter %.0f%%, next pass in %.1fs', what,
                 group.schedule_period_seconds, 100 * group.schedule_jitter,
                 initial)

    def _periodic_pass(self):
        """Run a pass; return the wait before the next one."""
        with self._passing:
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
        result = self._manager.run_once(self._clock())
        if self._metrics is not None:
            self._metrics.record_pass(result)
        return result.next_pass_in

    def _periodic_purge(self):
        """Purge if it is time (``scheduler.retention``); return the wait
        before the next look."""
        with self._purging:
            try:
                if not self._stopping.is_set():
                    self._retention.run_once(self._clock())
            except Exception:
                LOG.exception('Purge of old orders failed; the next one '
                              'runs as planned')
        return self._retention.next_check()

    def _periodic_ticks(self):
        """Create the orders of the schedules' due ticks
        (``scheduler.ticks``); return the wait before the next look."""
        with self._ticking:
            try:
                if not self._stopping.is_set():
                    return self._ticks.run_once(self._clock()).next_look_in
            except Exception:
                LOG.exception('Look at the schedules failed; the next one '
                              'runs as planned')
        return self._conf.scheduler.schedule_check_seconds

    def run_pass_now(self):
        """Run one pass at once (used by the demo and tests)."""
        return self._periodic_pass()

    def stop(self, graceful=True):
        """Finish or abandon the running pass, release the lock, stop."""
        self._stopping.set()
        # Waits for a running pass: it stops after its current batch and
        # releases the lock in its own ``finally``; and for a running
        # purge, which stops after its current batch; and for a look at
        # the schedules, which stops after its current order.
        with self._passing, self._purging, self._ticking:
            pass
        super().stop(graceful)
        if self._heartbeat is not None:
            self._heartbeat.remove()
        if self._announcer is not None:
            self._announcer.close()
            self._announcer = None
        if self._transport is not None and not self._shared_transport:
            self._transport.cleanup()
        self._transport = None
        if self._database is not None:
            self._database.dispose()
        tracing.flush()
        LOG.info('Retry scheduler stopped')
