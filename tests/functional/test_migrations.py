"""The migrated schema is the models' schema, on every backend."""

from alembic import autogenerate
from alembic import migration as alembic_migration
from alembic import script

from worker.db import migration
from worker.db import models


def test_one_head_and_one_base():
    assert len(migration.head_revisions()) == 1
    directory = script.ScriptDirectory(migration.script_location())
    assert len(directory.get_bases()) == 1


def test_migrated_schema_matches_models(database):
    with database.engine.connect() as connection:
        context = alembic_migration.MigrationContext.configure(
            connection, opts={'compare_type': True,
                              'compare_server_default': False})
        diff = autogenerate.compare_metadata(context, models.Base.metadata)
    assert diff == []
    assert migration.current_revision(database.engine) in \
        migration.head_revisions()


def test_upgrade_twice_is_a_no_op(database):
    before = migration.current_revision(database.engine)
    migration.upgrade(database.engine)
    assert migration.current_revision(database.engine) == before
