"""barbican-retry-keystone-listener's service: the notification listener
around ``manager.ProjectCleanup``."""

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging
from oslo_messaging._drivers import amqp as amqp_driver
from oslo_service import service

from worker import api
from worker.api import schedules as schedule_api
from worker.keystone_listener import endpoint as endpoint_module
from worker.keystone_listener import manager
from worker import rpc

LOG = logging.getLogger(__name__)

SERVICE_NAME = 'barbican-retry-keystone-listener'


def listener_conf(conf):
    """A ``ConfigOpts`` of the same files for the listener's transport,
    whose ``amqp_durable_queues`` is ``[keystone_listener]``'s.

    Keystone's exchange must be declared as Keystone declares it, while
    the casts of this process keep the project's durable queues
    (``worker.rpc.set_defaults``); the option is read from the
    transport's ``ConfigOpts``, hence one of its own.
    """
    private = cfg.ConfigOpts()
    private.register_opts(amqp_driver.amqp_opts,
                          group='oslo_messaging_rabbit')
    private([], project='barbican-retry', prog=SERVICE_NAME,
            default_config_files=list(conf.config_file or []),
            default_config_dirs=list(conf.config_dir or []))
    private.set_override('amqp_durable_queues',
                         conf.keystone_listener.amqp_durable_queues,
                         group='oslo_messaging_rabbit')
    rpc.register_global_only_opts(private)
    return private


class KeystoneListenerService(service.Service):
    """Listens to Keystone's notifications in the pool
    ``[keystone_listener] pool_name`` and ends the work of each deleted
    project.

    Everything it connects (database, broker) is built in ``start()``.
    """

    def __init__(self, conf):
        super().__init__()
        self._conf = conf
        self._orders = None
        self._transport = None
        self._listener = None

    def start(self):
        """Connect to the database and the broker, start listening."""
        super().start()
        options = self._conf.keystone_listener
        self._orders = api.OrderAPI.from_config(self._conf)
        schedules = schedule_api.ScheduleAPI(
            self._orders.database, self._conf, orders=self._orders)
        cleanup = manager.ProjectCleanup(self._orders, schedules)
        self._transport = oslo_messaging.get_notification_transport(
            listener_conf(self._conf), url=options.transport_url)
        targets = [oslo_messaging.Target(topic=topic,
                                         exchange=options.exchange)
                   for topic in options.topics]
        self._listener = oslo_messaging.get_notification_listener(
            self._transport, targets,
            [endpoint_module.ProjectDeletedEndpoint(cleanup)],
            executor='threading', pool=options.pool_name,
            allow_requeue=True)
        self._listener.start()
        LOG.info('Listening to Keystone\'s notifications: exchange %s, '
                 'topics %s, pool %s', options.exchange,
                 ', '.join(options.topics), options.pool_name)

    def stop(self, graceful=True):
        """Stop listening (the notification being handled finishes),
        then close the connections."""
        if self._listener is not None:
            self._listener.stop()
            self._listener.wait()
            self._listener = None
        if self._transport is not None:
            self._transport.cleanup()
            self._transport = None
        if self._orders is not None:
            self._orders.close()
            self._orders = None
        super().stop(graceful)
