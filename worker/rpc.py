"""Transport and RPC server construction for the worker topic."""

from oslo_config import cfg
import oslo_messaging as messaging
# NOTE: oslo.messaging has no public way to change the default of a driver
# option for every ConfigOpts and for oslo-config-generator alike; the
# option list itself is the one place both read.
from oslo_messaging._drivers import amqp as amqp_driver
from oslo_messaging.rpc import dispatcher

# Version of the worker's RPC interface (client and endpoints agree on it).
RPC_API_VERSION = '1.0'


def set_defaults():
    """Our defaults for oslo.messaging's options.

    Durable queues (and persistent messages), so that a broker restart
    loses no queued cast. A setting in the config file still wins.
    """
    messaging.set_transport_defaults('barbican_retry')
    cfg.set_defaults(amqp_driver.amqp_opts, amqp_durable_queues=True)


def get_transport(conf, url=None):
    """Return an RPC transport for ``url`` or ``[DEFAULT] transport_url``.

    Messages go to the ``barbican_retry`` exchange unless
    ``[DEFAULT] control_exchange`` says otherwise.
    """
    set_defaults()
    return messaging.get_rpc_transport(conf, url=url)


def get_server(transport, topic, server_name, endpoints):
    """Return an RPC server on ``topic`` with the threading executor.

    ``DefaultRPCAccessPolicy`` keeps private methods (``_name``) of the
    endpoints out of reach of a message.
    """
    target = messaging.Target(topic=topic, server=server_name,
                              version=RPC_API_VERSION)
    return messaging.get_rpc_server(
        transport, target, endpoints, executor='threading',
        access_policy=dispatcher.DefaultRPCAccessPolicy)
