"""alembic environment: runs migrations on the engine given by the caller.

``worker.db.migration`` passes the engine in ``config.attributes``; there
is no alembic.ini, so the database URL comes from barbican-retry's own
``[database]`` option and never from a second configuration file.
"""

from alembic import context

from worker.db import models

target_metadata = models.Base.metadata


def run_migrations_online():
    """Run the migrations in one transaction on the caller's engine."""
    engine = context.config.attributes['engine']
    with engine.connect() as connection:
        context.configure(connection=connection,
                          target_metadata=target_metadata,
                          render_as_batch=engine.dialect.name == 'sqlite')
        with context.begin_transaction():
            context.run_migrations()


run_migrations_online()
