"""The migrated schema is the models' schema, on every backend."""

from alembic import autogenerate
from alembic import migration as alembic_migration
from alembic import script
import pytest
from sqlalchemy import schema

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


@pytest.mark.parametrize('backend', ['sqlite'])
def test_sqlite_retry_ids_autoincrement_in_models_and_migrations(database):
    # compare_metadata does not compare table options: a table rebuilt
    # without AUTOINCREMENT would reuse the highest id on SQLite.
    created = str(schema.CreateTable(models.OrderRetryTask.__table__)
                  .compile(dialect=database.engine.dialect))
    with database.engine.connect() as connection:
        migrated = connection.exec_driver_sql(
            "SELECT sql FROM sqlite_master "
            "WHERE name = 'order_retry_tasks'").scalar()
    for ddl in (created, migrated):
        assert 'id INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT' in ddl
