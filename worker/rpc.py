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
