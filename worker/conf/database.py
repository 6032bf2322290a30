"""The ``[database]`` group, provided by oslo.db, with our defaults."""

from oslo_db import options as db_options

# NOTE: the embedded default is a SQLite file in the working directory, so
# that the demo and a single-host trial run need no database server.
# Production deployments set [database] connection to PostgreSQL or MariaDB.
DEFAULT_CONNECTION = 'sqlite:///barbican-retry.sqlite'


def register_opts(conf):
    """Register oslo.db's ``[database]`` options with our defaults."""
    db_options.set_defaults(conf, connection=DEFAULT_CONNECTION)


def list_opts():
    """Return oslo.db's ``[database]`` options for the sample config."""
    return dict(db_options.list_opts())
