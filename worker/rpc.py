"""Transport and RPC server construction for the worker topic."""

import oslo_messaging as messaging
from oslo_messaging.rpc import dispatcher

# Version of the worker's RPC interface (client and endpoints agree on it).
RPC_API_VERSION = '1.0'


def get_transport(conf, url=None):
    """Return an RPC transport for ``url`` or ``[DEFAULT] transport_url``.

    Messages go to the ``barbican_retry`` exchange unless
    ``[DEFAULT] control_exchange`` says otherwise.
    """
    messaging.set_transport_defaults('barbican_retry')
    transport = messaging.get_rpc_transport(conf, url=url)
    if 'oslo_messaging_rabbit' in conf:
        # NOTE: durable queues (and persistent messages) by default, so a
        # broker restart loses no queued cast; the driver reads the value
        # when it opens its first connection, after this. An explicit
        # setting in the config file still wins.
        conf.set_default('amqp_durable_queues', True,
                         group='oslo_messaging_rabbit')
    return transport


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
