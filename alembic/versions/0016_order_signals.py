"""Signals to a waiting step.

- ``order_signals``: one row per signal sent to an order
  (``OrderAPI.signal``), unique by ``(order_id, signal_id)`` so that a
  signal sent again is stored once; ``consumed_at``/``consumed_by`` are
  set by the run that completed the step that waited for it.

Additive only: a new table.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

# As worker.db.models.Timestamp: microseconds on MySQL/MariaDB.
_TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')
_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')

revision = '0016'
down_revision = '0015'
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
    bind = op.get_bind()
    op.create_table(
        'order_signals',
        sa.Column('id', _ID, primary_key=True, autoincrement=True),
        sa.Column('order_id', sa.String(36), nullable=False),
        sa.Column('signal_id', _exact(bind.dialect, 64), nullable=False),
        sa.Column('name', sa.String(64), nullable=False),
        sa.Column('payload', sa.JSON(), nullable=True),
        sa.Column('created_at', _TIMESTAMP, nullable=False),
        sa.Column('consumed_at', _TIMESTAMP, nullable=True),
        sa.Column('consumed_by', sa.String(64), nullable=True),
        sa.PrimaryKeyConstraint('id', name='pk_order_signals'),
        sa.ForeignKeyConstraint(
            ['order_id'], ['orders.id'], ondelete='CASCADE',
            name='fk_order_signals_order_id_orders'),
        sa.UniqueConstraint('order_id', 'signal_id',
                            name='uq_order_signals_order_id_signal_id'),
        sqlite_autoincrement=True)
