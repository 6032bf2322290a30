"""Schema migrations with alembic, driven from code (no alembic.ini).

The migration scripts live in the top-level ``alembic/`` folder of the
source tree; an installed copy goes to ``<prefix>/share/barbican-retry``.
"""

import os
import sys

from alembic import command
from alembic import config as alembic_config
from alembic import migration
from alembic import script
from alembic import util as alembic_util
import sqlalchemy as sa

_SOURCE_SCRIPTS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), 'alembic')
_INSTALLED_SCRIPTS = os.path.join(sys.prefix, 'share', 'barbican-retry',
                                  'alembic')
# alembic's default; alembic/env.py keeps it.
_VERSION_TABLE = 'alembic_version'


def script_location():
    """Return the folder holding ``env.py`` and ``versions/``."""
    for candidate in (_SOURCE_SCRIPTS, _INSTALLED_SCRIPTS):
        if os.path.exists(os.path.join(candidate, 'env.py')):
            return candidate
    raise RuntimeError('alembic migration scripts not found in %s or %s'
                       % (_SOURCE_SCRIPTS, _INSTALLED_SCRIPTS))


def _config(engine):
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location', script_location())
    cfg.attributes['engine'] = engine
    return cfg


def upgrade(engine, revision='head'):
    """Upgrade the schema of ``engine``'s database to ``revision``.

    Migrations run on a plain engine of the same URL: alembic manages its
    own transactions, which the service engine's SQLite transaction
    handling (BEGIN IMMEDIATE) would conflict with.
    """
    plain = sa.create_engine(engine.url.render_as_string(hide_password=False),
                             poolclass=sa.pool.NullPool)
    try:
        command.upgrade(_config(plain), revision)
    finally:
        plain.dispose()


def current_revision(engine):
    """Return the revision the database is at, or None if unversioned."""
    with engine.connect() as connection:
        return migration.MigrationContext.configure(
            connection).get_current_revision()


def stored_revision(engine):
    """Return the revision in alembic's version table, or None.

    ``current_revision()`` without alembic's INFO lines: every operator
    command asks it.
    """
    with engine.connect() as connection:
        if not sa.inspect(connection).has_table(_VERSION_TABLE):
            return None
        return connection.execute(
            sa.select(sa.column('version_num'))
            .select_from(sa.table(_VERSION_TABLE))).scalar()


def is_behind(revision):
    """True if ``revision`` is one of these scripts' but not a head.

    A revision these scripts do not know (a later release's) is not
    behind: the code of the release before may run on its schema.
    """
    directory = script.ScriptDirectory.from_config(_config(None))
    if revision in directory.get_heads():
        return False
    try:
        directory.get_revision(revision)
    except alembic_util.CommandError:
        return False
    return True


def head_revisions():
    """Return the head revisions of the migration scripts."""
    directory = script.ScriptDirectory.from_config(_config(None))
    return directory.get_heads()
