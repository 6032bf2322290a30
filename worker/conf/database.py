"""The ``[database]`` group: oslo.db's options, with our defaults, and
our own: how long finished orders are kept (``retention_days``)."""

from oslo_config import cfg
from oslo_db import options as db_options

# NOTE: the embedded default is a SQLite file in the working directory, so
# that the demo and a single-host trial run need no database server.
# Production deployments set [database] connection to PostgreSQL or MariaDB.
DEFAULT_CONNECTION = 'sqlite:///barbican-retry.sqlite'

# NOTE: a worker process writes the claims of its steps in one
# transaction at a time and their results in another
# (worker.common.group_commit), heartbeats in a third, and each delivery
# of notifications reads its events in one of its own, briefly. Every
# checkout past the pool's size opens and closes a new connection (a new
# server process on PostgreSQL), which costs more than the transaction:
# the pool holds them all but for a burst of deliveries.
DEFAULT_MAX_POOL_SIZE = 20

GROUP = 'database'

retention_opts = [
    cfg.FloatOpt('retention_days',
                 default=0.0, min=0.0, max=36500.0,
                 mutable=True,
                 help='Days a finished order (ACTIVE, ERROR, CANCELLED) is '
                      'kept after its last change; the retry daemons then '
                      'delete it with its steps, retry rows, events and '
                      'history, as barbican-retry-manage db purge '
                      '--older-than does. 0 keeps every order for ever. '
                      'One daemon at a time purges, at most once per '
                      'purge_interval_seconds in all, in a thread of its '
                      'own, a batch of orders per short transaction, '
                      'beside the retry passes. PENDING and CANCELLING '
                      'orders are never purged; an ERROR order that may '
                      'still be resumed is kept as long as it is younger '
                      'than this.'),
    cfg.IntOpt('purge_interval_seconds',
               default=3600, min=1, max=7 * 86400,
               mutable=True, advanced=True,
               help='Least time between the end of one purge by '
                    'retention_days and the start of the next, whichever '
                    'retry daemons run them (recorded in the OrderPurge '
                    'entity lock row). Also how long a purge whose daemon '
                    'died holds that row before another daemon takes it '
                    'over. Lower it only for tests.'),
]


def register_opts(conf):
    """Register oslo.db's ``[database]`` options with our defaults, and
    ours."""
    db_options.set_defaults(conf, connection=DEFAULT_CONNECTION,
                            max_pool_size=DEFAULT_MAX_POOL_SIZE)
    conf.register_opts(retention_opts, group=GROUP)


def list_opts():
    """Return our own ``[database]`` options for the sample config.

    oslo.db's are in its own namespace (``oslo.db``) of the generator.
    """
    return {GROUP: retention_opts}
