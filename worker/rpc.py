"""Transport and RPC server construction for the worker topic."""

import importlib

from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_log import log as logging
import oslo_messaging as messaging
# NOTE: oslo.messaging has no public way to change the default of its
# options for every ConfigOpts and for oslo-config-generator alike; the
# option lists themselves are the one place both read.
from oslo_messaging._drivers import amqp as amqp_driver
from oslo_messaging._drivers import impl_rabbit
from oslo_messaging.rpc import dispatcher
from oslo_messaging.rpc import server as rpc_server
from oslo_messaging import server as messaging_server

from worker import context

LOG = logging.getLogger(__name__)

# Version of the worker's RPC interface (client and endpoints agree on it).
#   1.0 - process_type_order, check_certificate_status
#   1.1 - run_steps: several steps in one message (the retry scheduler's)
#         Later, without a new version: the context of run_steps carries
#         the request ids of its steps' orders (worker.context
#         StepsContext, key "orders"); the steps are unchanged, and a
#         worker without it ignores the key, as oslo.messaging passes a
#         context's unknown keys through. Then, the same way, with
#         tracing on, the trace carrier of the cast's span per order
#         (key "traces", worker.tracing), present only when there are
#         some.
RPC_API_VERSION = '1.1'

# Generations are BIGINT columns.
_MAX_GENERATION = 2 ** 63 - 1


def is_generation(value):
    """True if ``value`` can be an order's generation (fencing token)."""
    # bool is an int to Python, not a token.
    return type(value) is int and 0 <= value < _MAX_GENERATION


#: Our default of ``rabbit_qos_prefetch_count`` (see ``set_defaults``):
#: enough to refill a worker's room between two reads without a round
#: trip to the broker, few enough that a full worker holds back little.
PREFETCH = 64


def set_defaults():
    """Our defaults for oslo.messaging's options.

    Durable queues (and persistent messages), so that a broker restart
    loses no queued cast.

    Messages a worker process runs at once (``executor_thread_pool_size``)
    are left at oslo.messaging's 64 (32 before): a process writes the
    claims and the results of its steps in batches
    (``worker.common.group_commit``), so the more steps in flight, the
    larger the batches and the less each step costs; the threads hold no
    database connection of their own. Measured on the drain benchmark (100,000
    rows, 3 processes, eventlet no longer loaded: ``worker.common.backend``):
    32 threads 0.26 ms of CPU per step, 4,139 rows/s and 88 MB; 64 threads
    0.23 ms, 4,747 to 4,924 rows/s and 92 MB.

    At most ``PREFETCH`` messages sent ahead to a consumer and not yet
    read (``rabbit_qos_prefetch_count``, unbounded in oslo.messaging):
    oslo.messaging acknowledges an RPC message as it reads it, so the
    prefetch alone bounds nothing, but a worker process with no room for
    more steps stops reading (``worker.intake``), and then the broker
    keeps the rest ready in the queue for the other processes instead of
    pushing them all into the full one's connection.

    Reconnection attempts at most 5 s apart (``rabbit_interval_max``,
    30 s in oslo.messaging), so that after an outage the workers consume
    again within a default period (15 s) of the broker's return. A
    setting in the config file still wins.
    """
    messaging.set_transport_defaults('barbican_retry')
    cfg.set_defaults(amqp_driver.amqp_opts, amqp_durable_queues=True)
    cfg.set_defaults(impl_rabbit.rabbit_opts, rabbit_interval_max=5,
                     rabbit_qos_prefetch_count=PREFETCH)


def executor_threads(conf):
    """How many messages a worker process runs at once
    (``executor_thread_pool_size``, registered here if it is not yet)."""
    conf.register_opts(messaging_server._pool_opts)
    return conf.executor_thread_pool_size


#: The option lists oslo.messaging registers on the global ``cfg.CONF``
#: only, when the module is imported, yet reads from the ``ConfigOpts`` of
#: the transport at every cast: ``(module, list, group)``, as oslo.messaging's
#: own ``ConfFixture`` registers them on a test's ConfigOpts. A module an
#: older release lacks (``_tracing`` came with 18.x) is skipped: that
#: release reads none of its options either.
_GLOBAL_ONLY_OPTS = (
    ('oslo_messaging._metrics.client', 'oslo_messaging_metrics',
     'oslo_messaging_metrics'),
    ('oslo_messaging._tracing.client', 'oslo_messaging_tracing',
     'oslo_messaging_tracing'),
)


def register_global_only_opts(conf):
    """Register on ``conf`` the options oslo.messaging registers on
    ``cfg.CONF`` only (``[oslo_messaging_tracing]``,
    ``[oslo_messaging_metrics]``).

    Without them, an RPC client on a ``ConfigOpts`` of its own (a service
    that calls ``OrderAPI.from_config(cfg.ConfigOpts())``) fails every
    cast with "no such option oslo_messaging_tracing".
    """
    for module_name, attribute, group in _GLOBAL_ONLY_OPTS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        conf.register_opts(getattr(module, attribute), group=group)


def get_transport(conf, url=None):
    """Return an RPC transport for ``url`` or ``[DEFAULT] transport_url``.

    Messages go to the ``barbican_retry`` exchange unless
    ``[DEFAULT] control_exchange`` says otherwise. ``conf`` may be any
    ``ConfigOpts``: the options oslo.messaging keeps on the global one
    only are registered on it too (``register_global_only_opts``).
    """
    set_defaults()
    register_global_only_opts(conf)
    return messaging.get_rpc_transport(conf, url=url)


class ContextSerializer(messaging.NoOpSerializer):
    """Carries a cast's ``worker.context.StepsContext`` (as nova's
    ``rpc.RequestContextSerializer`` carries its context).

    A RequestContext goes as its ``to_dict()``; a dict as it is. What
    comes is a ``StepsContext``, or ``{}`` when it carries no request id:
    a context that is not one (a hostile or broken sender) is logged and
    replaced by an empty one, and its message runs as any other.
    """

    def serialize_context(self, ctxt):
        """The dict of ``ctxt`` to send."""
        if isinstance(ctxt, oslo_context.RequestContext):
            return ctxt.to_dict()
        return ctxt

    def deserialize_context(self, ctxt):
        """The ``StepsContext`` of a message's context dict; ``{}`` for a
        context that carries no request id (nothing to log with)."""
        try:
            if not isinstance(ctxt, dict):
                raise TypeError('not a dict but %s' % type(ctxt).__name__)
            if not ctxt.get('request_id') and not ctxt.get(
                    context.ORDERS) and not ctxt.get(context.TRACES):
                return {}
            values = dict(ctxt)
            for key in _IDS:
                if not isinstance(values.get(key), (str, type(None))):
                    raise TypeError('its %s is a %s' % (
                        key, type(values[key]).__name__))
            return context.StepsContext.from_dict(values)
        except Exception as exc:
            # A message is never dropped for its context: its steps are
            # fenced on their own.
            LOG.warning('Ignored the malformed context of a message: %s',
                        exc)
            return context.StepsContext()


#: The keys of a context dict that are logged: strings (or None) only.
_IDS = ('request_id', 'global_request_id')


def get_server(transport, topic, server_name, endpoints,
               server_cls=rpc_server.RPCServer):
    """Return an RPC server on ``topic`` with the threading executor.

    ``server_cls``: oslo.messaging's ``RPCServer`` or a subclass (the
    worker's: ``worker.intake.bounded``, which holds at most so many
    steps received and not started, and leaves the rest in the broker).

    ``ExplicitRPCAccessPolicy``: a message reaches only the methods an
    endpoint declares with ``@messaging.expose``, never its other public
    methods (the service's own ``cancel_queued_steps``, say); anything
    else is refused (``NoSuchMethod``) and logged by oslo.messaging.

    Contexts are ``worker.context.StepsContext`` (``ContextSerializer``).
    """
    target = messaging.Target(topic=topic, server=server_name,
                              version=RPC_API_VERSION)
    return messaging.get_rpc_server(
        transport, target, endpoints, executor='threading',
        access_policy=dispatcher.ExplicitRPCAccessPolicy,
        serializer=ContextSerializer(), server_cls=server_cls)
