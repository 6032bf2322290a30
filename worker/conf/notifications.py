"""The ``[notifications]`` group: events of orders sent to callback URLs.

See ``worker.notifications`` and doc/notifications.md.
"""

from oslo_config import cfg

from worker.common import targets
from worker.conf import groups

notifications_group = cfg.OptGroup(
    'notifications', title='Notifications of order changes',
    help='Each change of an order\'s status (and, for order types that ask '
         'for it, each step that ends) is an event, delivered at least '
         'once and in order to the order\'s callback URL and to the '
         'endpoints below, as a signed HTTP POST.')

notifications_opts = [
    cfg.ListOpt('allowed_hosts',
                default=[],
                help='Hosts that callback URLs may name: host names '
                     '(".example.com" also allows every host under it), '
                     'IP addresses and CIDR networks (an IP address in a '
                     'URL must fall in one). Empty: no order may have a '
                     'callback URL. Checked at "order create" and again '
                     'before each request.'),
    cfg.ListOpt('endpoints',
                default=[],
                help='URLs that receive the events of every order created '
                     'while they are listed, besides its own callback '
                     'URL.'),
    cfg.StrOpt('secret',
               secret=True,
               help='Key (its UTF-8 bytes) of the Standard Webhooks '
                    'signature ("webhook-signature") of requests to URLs '
                    'without a secret of their own ("barbican-retry-manage '
                    'notification url set-secret"), and of the deprecated '
                    '"X-Barbican-Retry-Signature: sha256=<hex HMAC-SHA256 '
                    'of the body>" of those requests only (a URL with a '
                    'secret of its own gets none), removed in the next '
                    'release. Required when allowed_hosts or endpoints is '
                    'set.'),
    cfg.StrOpt('secret_key_file',
               help='File of Fernet keys (one per line, 32 bytes in '
                    'urlsafe base64: "barbican-retry-manage notification '
                    'key generate") under which the secrets of URLs '
                    '("notification url set-secret") are stored '
                    'encrypted. The first key encrypts, every key '
                    'decrypts: to rotate, put a new key first, then run '
                    '"notification key rotate", then drop the old key. '
                    'The file is read again when it changes. Required to '
                    'set a secret; a worker refuses to start without it '
                    'while the database holds one. Readable by the '
                    'service\'s user only.'),
    cfg.FloatOpt('timeout_seconds',
                 default=10.0, min=0.1, max=300.0, mutable=True,
                 help='A request not answered within this many seconds '
                      '(to connect, and then for the whole response) '
                      'failed.'),
    cfg.BoolOpt('verify_tls',
                default=True, mutable=True,
                help='Verify the certificates of https URLs.'),
    cfg.StrOpt('ca_file',
               mutable=True,
               help='CA bundle to verify https URLs against; unset: the '
                    'system\'s.'),
    cfg.IntOpt('max_response_bytes',
               default=65536, min=0, max=16777216, mutable=True,
               help='Bytes of a response body read at most (for the log); '
                    'the rest is not read.'),
    cfg.IntOpt('max_consecutive_failures',
               default=10, min=1, max=100000, mutable=True,
               help='A delivery that failed this many times in a row makes '
                    'its URL unavailable: every delivery to it waits, its '
                    'events kept, until "barbican-retry-manage '
                    'notification url enable URL".'),
    cfg.FloatOpt('retry_base_seconds',
                 default=1.0, min=0.0, max=3600.0, mutable=True,
                 help='First delay before a failed delivery is tried again; '
                      'it doubles at each failure in a row.'),
    cfg.FloatOpt('retry_max_seconds',
                 default=60.0, min=0.0, max=86400.0, mutable=True,
                 help='Cap of one delay between two tries of a delivery.'),
    cfg.BoolOpt('retry_jitter',
                default=True, mutable=True,
                help='Draw half of each delay at random, so that the '
                     'deliveries to a URL that came back spread out.'),
    cfg.IntOpt('events_per_run',
               default=20, min=1, max=1000, mutable=True,
               help='Events one delivery sends, one after the other, '
                    'before it lets other work run.'),
    cfg.FloatOpt('first_run_delay_seconds',
                 default=0.0, min=0.0, max=3600.0, mutable=True,
                 help='Seconds the deliveries of a new order wait before '
                      'their first run, so that the events of an order '
                      'that moves on quickly share one run: the order\'s '
                      'next event starts them at once; otherwise the '
                      'retry daemon casts them once the delay passed '
                      '(within [scheduler] schedule_period_seconds '
                      'more). 0 starts them with the order, one run for '
                      'order.created and another for the events after it.'),
]


def register_opts(conf):
    """Register the ``[notifications]`` options."""
    groups.register_group_opts(conf, notifications_group,
                               notifications_opts)


def validate(conf):
    """Check the URLs, the allowed hosts and the secret.

    :raises ValueError: naming the option.
    """
    group = conf.notifications
    targets.AllowedHosts.parse(group.allowed_hosts)
    for url in group.endpoints:
        try:
            targets.parse(url)
        except ValueError as exc:
            raise ValueError('[notifications] endpoints: %s' % exc) from None
    if (group.allowed_hosts or group.endpoints) and not group.secret:
        raise ValueError('[notifications] secret must be set when '
                         'allowed_hosts or endpoints is: every request is '
                         'signed')


def list_opts():
    """Return the options of this module for the sample config."""
    return {notifications_group: notifications_opts}
