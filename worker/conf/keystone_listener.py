"""The ``[keystone_listener]`` group: where barbican-retry-keystone-listener
hears Keystone's notifications.

See ``worker.keystone_listener`` and doc/keystone-listener.md.
"""

from oslo_config import cfg

from worker.conf import groups

keystone_listener_group = cfg.OptGroup(
    'keystone_listener', title='Keystone listener options',
    help='barbican-retry-keystone-listener ends the work of the projects '
         'deleted in Keystone: on Keystone\'s identity.project.deleted '
         'notification it cancels the project\'s PENDING orders and '
         'deletes its schedules (its finished orders are purged with '
         'everyone\'s, [retention]). Keystone must send its '
         'notifications to the broker: its [oslo_messaging_notifications] '
         'driver = messagingv2, with a transport_url this process '
         'reaches.')

keystone_listener_opts = [
    cfg.StrOpt('transport_url',
               secret=True,
               help='The broker Keystone sends its notifications to. '
                    'Unset: [oslo_messaging_notifications] transport_url, '
                    'and without it [DEFAULT] transport_url.'),
    cfg.ListOpt('topics',
                default=['notifications'],
                help='The topics Keystone sends to (its '
                     '[oslo_messaging_notifications] topics); the listener '
                     'reads the info priority of each.'),
    cfg.StrOpt('exchange',
               default='keystone',
               help='The exchange of Keystone\'s notifications: Keystone\'s '
                    '[DEFAULT] control_exchange, keystone unless it was '
                    'changed there.'),
    cfg.StrOpt('pool_name',
               default='barbican-retry-keystone-listener',
               help='The name of the queue the listeners share: every '
                    'listener with this name takes its part of the '
                    'notifications, and each notification reaches one of '
                    'them; other consumers of the same topic (another '
                    'pool, a telemetry service) get their own copy.'),
    cfg.BoolOpt('amqp_durable_queues',
                default=False,
                help='Whether the exchange and the pool\'s queue are '
                     'durable. Must equal Keystone\'s own [oslo_messaging_'
                     'rabbit] amqp_durable_queues (false unless set): the '
                     'broker refuses to declare an existing exchange with '
                     'another durability. This option alone decides it '
                     'for the listener\'s connection; the [oslo_messaging_'
                     'rabbit] amqp_durable_queues of this file still '
                     'applies to the casts of cancelled orders.'),
]


def register_opts(conf):
    """Register the ``[keystone_listener]`` options."""
    groups.register_group_opts(conf, keystone_listener_group,
                               keystone_listener_opts)


def list_opts():
    """Return the options of this module for the sample config."""
    return {keystone_listener_group: keystone_listener_opts}
