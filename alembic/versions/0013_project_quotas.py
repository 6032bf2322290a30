"""Per-project quotas of PENDING orders.

- ``project_quotas``: one row per project whose creates are counted
  against a quota. ``pending_orders`` is the project's own bound (an
  override set by the admin), or NULL for ``[quota]
  pending_orders_per_project``. The row is also what the project's
  creates serialize on (an UPDATE of ``held_at``, as admission's lock
  rows: a write that a Galera cluster certifies), so that the count is
  exact under concurrent creators; a project's first counted create
  inserts it.
- ``ix_orders_project_id_status``: the count of a project's PENDING
  orders reads one range of it.

Additive only: a new table and a new index.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

# As worker.db.models.Timestamp: microseconds on MySQL/MariaDB.
_TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def _project_id(dialect):
    # As worker.db.models.ExactString, which a migration does not import:
    # the models change after it.
    if dialect.name not in ('mysql', 'mariadb'):
        return sa.String(64)
    collation = ('utf8mb4_nopad_bin' if getattr(dialect, 'is_mariadb', False)
                 else 'utf8mb4_0900_bin')
    return mysql.VARCHAR(64, charset='utf8mb4', collation=collation)


def upgrade():
    bind = op.get_bind()
    op.create_table(
        'project_quotas',
        sa.Column('project_id', _project_id(bind.dialect), nullable=False),
        sa.Column('pending_orders', sa.Integer(), nullable=True),
        sa.Column('created_at', _TIMESTAMP, nullable=False),
        sa.Column('updated_at', _TIMESTAMP, nullable=False),
        sa.Column('held_at', _TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint('project_id', name='pk_project_quotas'))
    op.create_index('ix_orders_project_id_status', 'orders',
                    ['project_id', 'status'])
