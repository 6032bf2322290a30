"""Orders, order retry tasks and entity locks.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None

Timestamp = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')
BigId = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def upgrade():
    op.create_table(
        'orders',
        sa.Column('id', sa.String(36), nullable=False),
        sa.Column('type', sa.String(32), nullable=False),
        sa.Column('status', sa.String(16), nullable=False),
        sa.Column('meta', sa.JSON(), nullable=False),
        sa.Column('error_reason', sa.Text(), nullable=True),
        sa.Column('generation', sa.Integer(), nullable=False),
        sa.Column('step', sa.String(64), nullable=True),
        sa.Column('attempt', sa.Integer(), nullable=False),
        sa.Column('created_at', Timestamp, nullable=False),
        sa.Column('updated_at', Timestamp, nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_orders'),
    )
    op.create_index('ix_orders_status', 'orders', ['status'])

    op.create_table(
        'order_retry_tasks',
        sa.Column('id', BigId, autoincrement=True, nullable=False),
        sa.Column('order_id', sa.String(36), nullable=False),
        sa.Column('retry_task', sa.String(64), nullable=False),
        sa.Column('retry_at', Timestamp, nullable=False),
        sa.Column('retry_args', sa.Text(), nullable=False),
        sa.Column('retry_kwargs', sa.Text(), nullable=False),
        sa.Column('retry_count', sa.Integer(), nullable=False),
        sa.Column('parked', sa.Boolean(), nullable=False),
        sa.Column('park_reason', sa.Text(), nullable=True),
        sa.Column('created_at', Timestamp, nullable=False),
        sa.ForeignKeyConstraint(
            ['order_id'], ['orders.id'], ondelete='CASCADE',
            name='fk_order_retry_tasks_order_id_orders'),
        sa.PrimaryKeyConstraint('id', name='pk_order_retry_tasks'),
    )
    op.create_index('ix_order_retry_tasks_due', 'order_retry_tasks',
                    ['parked', 'retry_at', 'id'])
    op.create_index('ix_order_retry_tasks_order_id', 'order_retry_tasks',
                    ['order_id'])

    op.create_table(
        'entity_locks',
        sa.Column('entity_to_lock', sa.String(64), nullable=False),
        sa.Column('worker_host_name', sa.String(255), nullable=False),
        sa.Column('owner_token', sa.String(36), nullable=False),
        sa.Column('created_at', Timestamp, nullable=False),
        sa.PrimaryKeyConstraint('entity_to_lock', name='pk_entity_locks'),
    )
