"""Life after failure: every run of a step, crashes counted, purge by age.

- ``order_step_runs``: one row per run of a step that ended (done, retry,
  failed, taken back, superseded), for ``order history``; deleted with
  its order.
- ``order_steps.crashes``: how many times the worker running the step
  died; at ``[worker] max_step_crashes`` the step fails.
- ``ix_orders_status_updated_at``: the finished orders older than a day,
  which ``db purge`` reads a batch at a time.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

_TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')
_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def upgrade():
    op.create_table(
        'order_step_runs',
        sa.Column('id', _ID, primary_key=True, autoincrement=True),
        sa.Column('order_id', sa.String(36), nullable=False),
        sa.Column('step', sa.String(64), nullable=False),
        sa.Column('generation', sa.Integer(), nullable=False),
        sa.Column('attempt', sa.Integer(), nullable=False),
        sa.Column('worker', sa.String(255), nullable=True),
        sa.Column('started_at', _TIMESTAMP, nullable=True),
        sa.Column('finished_at', _TIMESTAMP, nullable=False),
        sa.Column('result', sa.String(16), nullable=False),
        sa.Column('error', sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint('id', name='pk_order_step_runs'),
        sa.ForeignKeyConstraint(
            ['order_id'], ['orders.id'], ondelete='CASCADE',
            name='fk_order_step_runs_order_id_orders'),
        sqlite_autoincrement=True)
    op.create_index('ix_order_step_runs_order_id_id', 'order_step_runs',
                    ['order_id', 'id'])
    op.add_column('order_steps', sa.Column(
        'crashes', sa.Integer(), nullable=False, server_default='0'))
    op.create_index('ix_orders_status_updated_at', 'orders',
                    ['status', 'updated_at'])
