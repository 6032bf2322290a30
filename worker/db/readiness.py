"""Whether a daemon may start on its database, checked before it does.

Without it, ``barbican-retry`` on a SQLite file that does not exist
creates an empty one and fails every pass on "no such table", and a
worker pool forks processes that fail the same way. ``check`` refuses
instead, naming the database and the command that creates or upgrades
it; the operator commands make the same refusals
(``scheduler.manage.connection``).
"""

import os
import shlex

from oslo_db import exception as db_exception
from oslo_log import log as logging
import sqlalchemy as sa

from worker.db import migration
from worker.db import session as db_session

LOG = logging.getLogger(__name__)

#: The command that creates and upgrades the schema.
MANAGE = 'barbican-retry-manage'

#: How long the check waits for a server to take its one connection, in
#: seconds, unless ``[database] connection`` sets ``connect_timeout``.
CONNECT_TIMEOUT = 5

#: The backends whose drivers (psycopg2, PyMySQL) take a
#: ``connect_timeout`` in the URL's query.
_CONNECT_TIMEOUT_BACKENDS = ('postgresql', 'mysql')


def sqlite_file(url):
    """The file of a SQLite URL, or None (another database, in memory)."""
    parsed = sa.engine.make_url(url)
    path = parsed.database
    if parsed.get_backend_name() != 'sqlite' or not path or \
            path == ':memory:' or path.startswith('file:'):
        return None
    return path


def schema_problem(engine):
    """What keeps this code from running on ``engine``'s schema, or None.

    A schema a later release migrated is no problem: the code of the
    release before runs on it (doc/install.md).
    """
    revision = migration.stored_revision(engine)
    if revision is None:
        return 'has no schema'
    if migration.is_behind(revision):
        return 'is at schema revision %s, older than this code\'s %s' % (
            revision, ', '.join(migration.head_revisions()))
    return None


def upgrade_command(config_files):
    """The ``db upgrade`` command line on the same configuration files."""
    words = [MANAGE]
    for path in config_files:
        words += ['--config-file', path]
    return ' '.join(shlex.quote(word) for word in words + ['db', 'upgrade'])


def check(conf, prog):
    """Exit (``SystemExit`` with a message for ``prog``) unless ``[database]
    connection`` names a database migrated for this code; create nothing.

    A database that cannot be reached is no reason to exit: it is logged,
    and the daemon starts as it would during any outage. The check tries
    one connection (``_engine_options``), not oslo.db's ``[database]
    max_retries`` spaced by ``retry_interval``: the daemon's own engine
    waits that long again, and both run before systemd's start timeout.
    """
    url = conf.database.connection
    hint = 'run: %s' % upgrade_command(conf.config_file)
    path = sqlite_file(url)
    if path is not None and not os.path.exists(path):
        raise SystemExit('%s: the SQLite database %s of [database] '
                         'connection does not exist (missing or not '
                         'upgraded); %s' % (prog, os.path.abspath(path),
                                            hint))
    try:
        problem, url = _read_schema(conf)
    except db_session.MissingDriver as exc:
        raise SystemExit('%s: %s' % (prog, exc))
    except (db_exception.DBError, sa.exc.SQLAlchemyError) as exc:
        # A server that is down at boot: the daemon starts and waits for
        # it as for any outage, as it did before this check.
        LOG.warning('Could not read the schema revision of the database '
                    '(%s); starting anyway', exc)
        return
    if problem is not None:
        raise SystemExit('%s: the database %s of [database] connection %s '
                         '(missing or not upgraded); %s'
                         % (prog, url, problem, hint))


def _read_schema(conf):
    """``(schema_problem, URL without password)`` of ``[database]
    connection``."""
    url = conf.database.connection
    database = db_session.Database.from_url(url, **_engine_options(url))
    try:
        return (schema_problem(database.engine),
                sa.engine.make_url(url).render_as_string(hide_password=True))
    finally:
        database.dispose()


def _engine_options(url):
    """The options of the check's engine on ``url``: no connection tested
    (nor retried) when it is built, and a short ``connect_timeout`` for a
    server that does not answer (``CONNECT_TIMEOUT``)."""
    options = {'max_retries': 0}
    parsed = sa.engine.make_url(url)
    if parsed.get_backend_name() in _CONNECT_TIMEOUT_BACKENDS and \
            'connect_timeout' not in parsed.query:
        options['connection_parameters'] = (
            'connect_timeout=%d' % CONNECT_TIMEOUT)
    return options
