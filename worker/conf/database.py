"""The ``[database]`` group, provided by oslo.db, with our defaults."""

from oslo_db import options as db_options

# NOTE: the embedded default is a SQLite file in the working directory, so
# that the demo and a single-host trial run need no database server.
# Production deployments set [database] connection to PostgreSQL or MariaDB.
DEFAULT_CONNECTION = 'sqlite:///barbican-retry.sqlite'

# NOTE: a worker process writes the claims of its steps in one
# transaction at a time and their results in another
# (worker.steps.group_commit), heartbeats in a third, and each delivery
# of notifications reads its events in one of its own, briefly. Every
# checkout past the pool's size opens and closes a new connection (a new
# server process on PostgreSQL), which costs more than the transaction:
# the pool holds them all but for a burst of deliveries.
DEFAULT_MAX_POOL_SIZE = 20


def register_opts(conf):
    """Register oslo.db's ``[database]`` options with our defaults."""
    db_options.set_defaults(conf, connection=DEFAULT_CONNECTION,
                            max_pool_size=DEFAULT_MAX_POOL_SIZE)


def list_opts():
    """Return oslo.db's ``[database]`` options for the sample config."""
    return dict(db_options.list_opts())
