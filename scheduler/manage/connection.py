"""The database ``barbican-retry-manage`` opens, or why it will not.

Without these checks a command run without ``[database] connection``
quietly creates an empty SQLite file (the default URL is relative) and
then fails with a raw "no such table"; a schema older than the code
fails on a raw "no such column". Each refusal here names what to
do instead and exits with status 1, having created nothing.
"""

import os
import shlex

from oslo_config import cfg

from worker.db import readiness
from worker.db import session as db_session

PROG = 'barbican-retry-manage'

# Where the value comes from when nobody set it: the option's default,
# or the one our code gave it (worker.conf.database).
_NOT_SET = (cfg.Locations.opt_default, cfg.Locations.set_default)

_EXAMPLE = ('e.g. connection = sqlite:////var/lib/barbican-retry/'
            'barbican-retry.sqlite, or postgresql+psycopg2://USER:PASSWORD'
            '@HOST/barbican_retry')


def command_line(config_args, *words):
    """The ``barbican-retry-manage`` command with the same config files.

    :param config_args: the ``--config-file``/``--config-dir`` arguments
        this run was given, so that the hint reads the same database.
    """
    return ' '.join(shlex.quote(word)
                    for word in (PROG,) + tuple(config_args) + words)


def configured_url(conf):
    """Return ``[database] connection``, or exit if nobody set it."""
    location = conf.get_location('connection', 'database').location
    if location in _NOT_SET:
        read = ', '.join(conf.config_file) or 'none'
        raise SystemExit(
            '%s: [database] connection is not set (configuration files '
            'read: %s); pass --config-file with a [database] connection, '
            '%s' % (PROG, read, _EXAMPLE))
    return conf.database.connection


#: The file of a SQLite URL, or None (another database, in memory).
sqlite_path = readiness.sqlite_file


def check_file_exists(url, config_args):
    """Exit if ``url`` names a SQLite file that does not exist.

    SQLite would create it, empty, at the first connection.
    """
    path = sqlite_path(url)
    if path is not None and not os.path.exists(path):
        raise SystemExit(
            '%s: the SQLite database %s of [database] connection does not '
            'exist; create it with: %s'
            % (PROG, os.path.abspath(path),
               command_line(config_args, 'db', 'upgrade')))


def check_schema(database, config_args):
    """Exit if the database was never migrated, or is behind this code.

    A look at alembic's version table, so that a command does not fail
    later on a raw "no such table" or "no such column".
    """
    problem = readiness.schema_problem(database.engine)
    if problem is None:
        return
    url = database.engine.url.render_as_string(hide_password=True)
    database.dispose()
    raise SystemExit('%s: the database %s %s; upgrade it with: %s'
                     % (PROG, url, problem,
                        command_line(config_args, 'db', 'upgrade')))


def open_database(conf, config_args, create=False, migrated=True):
    """Build the ``Database`` of ``[database] connection``, checked.

    :param create: True for ``db upgrade`` only: it may create the
        SQLite file.
    :param migrated: False for the ``db`` commands, which read or write
        the schema's revision themselves.
    """
    url = configured_url(conf)
    if not create:
        check_file_exists(url, config_args)
    database = db_session.Database.from_conf(conf)
    if migrated:
        check_schema(database, config_args)
    return database
