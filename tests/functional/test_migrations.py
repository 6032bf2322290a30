"""The migrated schema is the models' schema, on every backend."""

from alembic import autogenerate
from alembic import migration as alembic_migration
from alembic import script
import pytest
import sqlalchemy as sa
from sqlalchemy import schema

from worker.db import migration
from worker.db import models


def test_one_head_and_one_base():
    assert len(migration.head_revisions()) == 1
    directory = script.ScriptDirectory(migration.script_location())
    assert len(directory.get_bases()) == 1


def test_migrated_schema_matches_models(migrated_database):
    database = migrated_database
    with database.engine.connect() as connection:
        context = alembic_migration.MigrationContext.configure(
            connection, opts={'compare_type': True,
                              'compare_server_default': False,
                              'include_object': _not_backend_only(
                                  connection.dialect.name)})
        diff = autogenerate.compare_metadata(context, models.Base.metadata)
    assert diff == []
    assert migration.current_revision(database.engine) in \
        migration.head_revisions()


def _not_backend_only(dialect):
    """``include_object`` that leaves out the migrated indexes of this
    backend only (``models.BACKEND_ONLY_INDEXES``)."""
    names = models.BACKEND_ONLY_INDEXES.get(dialect, ())

    def include(item, name, kind, reflected, compare_to):
        return not (kind == 'index' and reflected and name in names)
    return include


def test_upgrade_twice_is_a_no_op(migrated_database):
    database = migrated_database
    before = migration.current_revision(database.engine)
    migration.upgrade(database.engine)
    assert migration.current_revision(database.engine) == before


@pytest.mark.parametrize('backend', ['sqlite'])
def test_sqlite_retry_ids_autoincrement_in_models_and_migrations(
        migrated_database):
    database = migrated_database
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


def _schema(engine):
    """Everything the inspector reads of each table, and the rows of
    alembic_version."""
    inspector = sa.inspect(engine)
    tables = {}
    for table in inspector.get_table_names():
        tables[table] = (
            [(column['name'], str(column['type']), column['nullable'],
              column['default'], column.get('autoincrement'))
             for column in inspector.get_columns(table)],
            inspector.get_pk_constraint(table),
            sorted(inspector.get_indexes(table), key=lambda i: i['name']),
            sorted(inspector.get_foreign_keys(table),
                   key=lambda k: k['name'] or ''),
            sorted(inspector.get_unique_constraints(table),
                   key=lambda u: u['name'] or ''),
            sorted(inspector.get_check_constraints(table),
                   key=lambda c: c['name'] or ''),
            inspector.get_table_options(table))
    with engine.connect() as connection:
        versions = connection.exec_driver_sql(
            'SELECT version_num FROM alembic_version').fetchall()
    return tables, versions


def test_the_copied_database_of_the_tests_is_the_migrated_one(
        database, migrated_database, backend, tmp_path):
    # The other tests' ``database`` is a copy of a template
    # (tests/functional/databases.py): it must be what the migrations
    # make, down to the constraints' names and the table options.
    copied = _schema(database.engine)
    assert copied == _schema(migrated_database.engine)
    assert 'orders' in copied[0] and copied[1]
