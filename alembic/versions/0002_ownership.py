"""Order ownership and dispatch times; service heartbeats.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None

Timestamp = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def upgrade():
    with op.batch_alter_table('orders') as batch:
        batch.add_column(sa.Column('owner', sa.String(255), nullable=True))
        batch.add_column(sa.Column('claimed_at', Timestamp, nullable=True))
        batch.add_column(sa.Column('dispatched_at', Timestamp,
                                   nullable=True))
        batch.create_index('ix_orders_owner', ['owner'])
        batch.create_index('ix_orders_dispatched_at', ['dispatched_at'])

    op.create_table(
        'services',
        sa.Column('name', sa.String(255), nullable=False),
        sa.Column('kind', sa.String(16), nullable=False),
        sa.Column('host', sa.String(255), nullable=False),
        sa.Column('pid', sa.Integer(), nullable=False),
        sa.Column('started_at', Timestamp, nullable=False),
        sa.Column('heartbeat_at', Timestamp, nullable=False),
        sa.Column('last_pass_at', Timestamp, nullable=True),
        sa.Column('next_pass_at', Timestamp, nullable=True),
        sa.PrimaryKeyConstraint('name', name='pk_services'),
    )
    op.create_index('ix_services_heartbeat_at', 'services', ['heartbeat_at'])
