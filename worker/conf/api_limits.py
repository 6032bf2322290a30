"""The ``[api_limits]`` group: the bounds of what a caller of
``worker.api`` (and so of ``barbican-retry-manage``) may create.

Read at each request (``worker.api``), so a SIGHUP applies a change to
the processes that reload their configuration. Every refusal is an
``InvalidRequest`` naming the field and the bound (doc/api.md,
"Bounds").
"""

from oslo_config import cfg

from worker.conf import groups

api_limits_group = cfg.OptGroup(
    'api_limits', title='Bounds of API requests',
    help='What one request to the Python API (worker.api, '
         'worker.schedule_api) or one operator command may create. A '
         'request beyond a bound is refused before anything is written.')

api_limits_opts = [
    cfg.IntOpt('max_meta_bytes',
               default=65536, min=1024, max=16777216, mutable=True,
               help='Largest metadata of an order or schedule, in bytes of '
                    'compact UTF-8 JSON (1 KiB to 16 MiB). Every read of '
                    'an order (order show, wait) carries its metadata.'),
    cfg.IntOpt('max_meta_depth',
               default=32, min=1, max=100, mutable=True,
               help='Deepest nesting of objects and arrays in metadata (1 '
                    'to 100; 1 is a flat object).'),
    cfg.IntOpt('max_callback_urls',
               default=10, min=0, max=100, mutable=True,
               help='Callback URLs one order may name (0 to 100). Each is '
                    'a delivery step of the order, besides the URLs of '
                    '[notifications] endpoints, which are not counted.'),
    cfg.IntOpt('max_orders_per_request',
               default=1000, min=1, max=100000, mutable=True,
               help='Orders one create_many (order create --count) may '
                    'create, in one transaction (1 to 100000).'),
    cfg.IntOpt('max_bulk_orders',
               default=100000, min=1, max=10000000, mutable=True,
               help='Orders one bulk action (order bulk, OrderAPI.bulk) '
                    'may change at most, and its --limit at most (1 to '
                    '10000000). A bulk action that matches more changes '
                    'this many and says how many it matched.'),
    cfg.IntOpt('bulk_batch_size',
               default=200, min=1, max=5000, mutable=True,
               help='Orders a bulk action changes per transaction (1 to '
                    '5000): each batch is one short transaction, so that '
                    'the workers go on with the other orders between '
                    'batches. Larger batches change orders faster and '
                    'hold their row locks longer.'),
]


def register_opts(conf):
    """Register the ``[api_limits]`` options."""
    groups.register_group_opts(conf, api_limits_group, api_limits_opts)


def list_opts():
    """Return the options of this module for the sample config."""
    return {api_limits_group: api_limits_opts}
