"""Order priorities; retry row ids never reused on SQLite.

``orders.priority`` and ``order_retry_tasks.priority`` (0 for every
existing row: all of them were equal) and the index the due query reads
each priority level from, ``ix_order_retry_tasks_priority_due``.

On SQLite ``order_retry_tasks`` is rebuilt with ``id INTEGER PRIMARY KEY
AUTOINCREMENT``: before, SQLite gave a new row the highest id plus one,
which is the id of the row with the highest id once that row is deleted,
so the scheduler could not delete the rows it read by id alone. Every row
keeps its id, and the sequence starts above the highest of them. Its
indexes and its foreign key to ``orders`` (ON DELETE CASCADE) are
rebuilt with it. PostgreSQL and MariaDB never reuse an id (MariaDB keeps
its AUTO_INCREMENT counter across restarts since 10.2.4): they only get
the new column and index.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from alembic import op
import sqlalchemy as sa

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def _priority():
    return sa.Column('priority', sa.SmallInteger(), nullable=False,
                     server_default='0')


def upgrade():
    sqlite = op.get_bind().dialect.name == 'sqlite'
    with op.batch_alter_table('orders') as batch:
        batch.add_column(_priority())
    # On SQLite only a new table can have AUTOINCREMENT: the batch copies
    # the rows, their ids included, into one, and drops the old table.
    with op.batch_alter_table(
            'order_retry_tasks', recreate='always' if sqlite else 'auto',
            table_kwargs={'sqlite_autoincrement': True}) as batch:
        batch.add_column(_priority())
        batch.create_index('ix_order_retry_tasks_priority_due',
                           ['parked', 'priority', 'retry_at', 'id'])
    if sqlite:
        _start_sequence_above_ids(op.get_bind())


def _start_sequence_above_ids(connection):
    """Make the next id the highest one plus one.

    The copy already raised it (SQLite does when a row comes with a higher
    id, and renames the sequence with its table); it is set here so that
    the one promise of this revision does not rest on those details.
    """
    connection.exec_driver_sql(
        "DELETE FROM sqlite_sequence WHERE name = 'order_retry_tasks'")
    connection.exec_driver_sql(
        "INSERT INTO sqlite_sequence (name, seq) "
        "SELECT 'order_retry_tasks', COALESCE(MAX(id), 0) "
        "FROM order_retry_tasks")
