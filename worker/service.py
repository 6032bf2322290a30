"""barbican-worker's service: one RPC server per process."""

from oslo_log import log as logging
from oslo_service import service

from worker.common import backend
from worker.common import clock
from worker.common import heartbeat
from worker.common import metrics_server
from worker.common import reports
from worker.conf import order_types as type_conf
from worker.db import models
from worker.db import session as db_session
from worker import intake
from worker import manager
from worker import metrics
from worker.notifications import bus
from worker.notifications import sealing
from worker import rpc
from worker import rpcapi
from worker import tracing

LOG = logging.getLogger(__name__)

#: The name of its Guru Meditation Reports (``worker.common.reports``).
SERVICE_NAME = 'barbican-worker'


class WorkerService(service.Service):
    """An oslo.messaging RPC server on ``[worker] topic``, or on the topic
    it is given (``barbican-worker --topic``).

    The engine, transport and server are built in ``start()``, in the
    process that runs them, never before the launcher forks.

    :param transport: an existing transport to share (the all-in-one demo
        passes its in-process one); by default one is built in ``start()``.
    :param topic: the topic served, None for ``[worker] topic``. The steps
        this worker casts go to their own topics (``rpcapi.Topics``)
        whatever it serves.
    """

    def __init__(self, conf, transport=None, topic=None):
        super().__init__()
        self._conf = conf
        self._transport = transport
        self._topic = topic
        self._server = None
        self._room = None
        self._endpoint = None
        self._database = None
        self._heartbeat = None
        self._announcer = None

    def start(self):
        """Connect to the database and the broker, then serve."""
        backend.require_threading()
        super().start()
        # A forked process keeps the launcher's signal handler, not the
        # file trigger's thread.
        reports.install(self._conf, SERVICE_NAME)
        # This process's own provider: start() runs after the fork.
        tracing.configure(self._conf, 'barbican-worker')
        self._database = db_session.Database.from_conf(self._conf)
        # Fail now, naming the option, rather than at each delivery.
        sealing.check(self._conf, self._database)
        database_clock = clock.DatabaseClock(
            self._database, self._conf.max_clock_offset_seconds)
        topic = self._topic or self._conf.worker.topic
        self._heartbeat = heartbeat.Heartbeat(self._database, models.WORKER,
                                              self._conf.host, database_clock,
                                              topic=topic)
        self._heartbeat.start(self.tg, self._conf.report_interval)
        transport = self._transport or rpc.get_transport(self._conf)
        self._room = intake.Room(self._conf.worker.max_queued_steps)
        registry, observers = self._metrics(database_clock)
        # Ready steps are cast to their order type's topic: our own pool's
        # for the next steps of the orders we run; deliveries to [worker]
        # topic.
        worker_api = rpcapi.WorkerAPI.from_conf(self._conf, transport)
        self._announcer = bus.from_conf(self._conf, registry)
        self._endpoint = manager.WorkerManager(
            self._conf, self._database, self._heartbeat.name,
            worker_api=worker_api, clock=database_clock.now,
            step_concurrency=rpc.executor_threads(self._conf),
            announcer=self._announcer, topic=topic, intake=self._room,
            **observers)
        self.tg.add_timer_args(self._conf.report_interval,
                               self._endpoint.apply_deferred_results,
                               initial_delay=self._conf.report_interval,
                               stop_on_exception=False)
        self._server = rpc.get_server(transport, topic, self._conf.host,
                                      [self._endpoint],
                                      intake.bounded(self._room))
        self._server.start()
        served = type_conf.types_of_topic(self._conf, topic)
        LOG.info('Worker %s serving topic %s (order types: %s)',
                 self._heartbeat.name, topic, ', '.join(served) or 'none')

    def _metrics(self, database_clock):
        """Export this process's metrics if ``[metrics] enabled``:
        ``(registry, observers)``, the observers as ``WorkerManager``
        keywords; ``(None, {})`` otherwise."""
        if not self._conf.metrics.enabled:
            return None, {}
        step_metrics = metrics.WorkerMetrics()
        metrics_server.export_clock_offset(step_metrics.registry,
                                           database_clock)
        step_metrics.export_queued_steps(self._room)
        metrics_server.serve(self._conf, step_metrics.registry,
                             self._conf.metrics.worker_port,
                             tries=self._conf.worker.workers)
        return step_metrics.registry, {
            'observe_result': step_metrics.observe_result,
            'observe_delivery': step_metrics.observe_delivery,
            'observe_continued': step_metrics.observe_continued}

    def stop(self, graceful=True):
        """Stop taking messages, let the steps in progress finish, leave."""
        if self._server is not None:
            # The listener may be waiting for room; stop() waits for it.
            self._room.open()
            self._server.stop()
            self._endpoint.cancel_queued_steps()
            self._server.wait()
            # Before the heartbeat goes: a step still running or claimed
            # here would be recovered as a crash, and so would one whose
            # result is kept from an outage (a last try to write them).
            self._endpoint.wait_for_steps()
            self._endpoint.apply_deferred_results()
            self._server = None
        # Timers first, so that no heartbeat re-creates the removed row.
        super().stop(graceful)
        if self._heartbeat is not None:
            self._heartbeat.remove()
        if self._announcer is not None:
            self._announcer.close()
            self._announcer = None
        if self._database is not None:
            self._database.dispose()
        tracing.flush()
