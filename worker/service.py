"""barbican-worker's service: one RPC server per process."""

from oslo_log import log as logging
from oslo_service import service

from worker.db import session as db_session
from worker import manager
from worker import rpc

LOG = logging.getLogger(__name__)


class WorkerService(service.Service):
    """An oslo.messaging RPC server on ``[worker] topic``.

    The engine, transport and server are built in ``start()``, in the
    process that runs them, never before the launcher forks.

    :param transport: an existing transport to share (the all-in-one demo
        passes its in-process one); by default one is built in ``start()``.
    """

    def __init__(self, conf, transport=None):
        super().__init__()
        self._conf = conf
        self._transport = transport
        self._server = None
        self._database = None

    def start(self):
        """Connect to the database and the broker, then serve."""
        super().start()
        self._database = db_session.Database.from_conf(self._conf)
        transport = self._transport or rpc.get_transport(self._conf)
        endpoint = manager.WorkerManager(
            self._conf, self._database, manager.plugin_factory(self._conf))
        self._server = rpc.get_server(transport, self._conf.worker.topic,
                                      self._conf.host, [endpoint])
        self._server.start()
        LOG.info('Worker serving topic %s', self._conf.worker.topic)

    def stop(self, graceful=True):
        """Stop taking messages and let the steps in progress finish."""
        if self._server is not None:
            self._server.stop()
            self._server.wait()
            self._server = None
        if self._database is not None:
            self._database.dispose()
        super().stop(graceful)
