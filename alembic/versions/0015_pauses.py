"""Pauses of order types, topics, resource keys, orders and schedules.

- ``pauses``: one row per thing paused, ``(target, name)`` unique. A step
  it holds waits on a retry row whose ``waiting_for`` is ``pause:<id>``
  (the column flow control's waits use already), so nothing else changes.

Additive only: a new table.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

# As worker.db.models.Timestamp: microseconds on MySQL/MariaDB.
_TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')
# As worker.db.models.BigId.
_BIG_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None


def _exact(dialect, length):
    # As worker.db.models.ExactString, which a migration does not import:
    # the models change after it.
    if dialect.name not in ('mysql', 'mariadb'):
        return sa.String(length)
    collation = ('utf8mb4_nopad_bin' if getattr(dialect, 'is_mariadb', False)
                 else 'utf8mb4_0900_bin')
    return mysql.VARCHAR(length, charset='utf8mb4', collation=collation)


def upgrade():
    dialect = op.get_bind().dialect
    op.create_table(
        'pauses',
        sa.Column('id', _BIG_ID, autoincrement=True, nullable=False),
        sa.Column('target', sa.String(16), nullable=False),
        sa.Column('name', _exact(dialect, 255), nullable=False),
        sa.Column('reason', sa.String(255), nullable=True),
        sa.Column('project_id', _exact(dialect, 64), nullable=True),
        sa.Column('created_at', _TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_pauses'),
        sa.UniqueConstraint('target', 'name', name='uq_pauses_target_name'),
        sqlite_autoincrement=True)
