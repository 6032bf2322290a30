"""Notifications: the URLs that receive orders' events, and the events.

A delivery to a URL is a step of its order (``notify:<url id>``); the
index ``ix_order_steps_status_name`` finds the open ones without reading
the finished steps.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

_TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')
_ID = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def upgrade():
    op.create_table(
        'notification_urls',
        sa.Column('id', _ID, primary_key=True, autoincrement=True),
        sa.Column('url', sa.Text(), nullable=False),
        sa.Column('url_hash', sa.String(64), nullable=False),
        sa.Column('available', sa.Boolean(), nullable=False),
        sa.Column('failures', sa.Integer(), nullable=False),
        sa.Column('last_error', sa.Text(), nullable=True),
        sa.Column('last_failure_at', _TIMESTAMP, nullable=True),
        sa.Column('disabled_at', _TIMESTAMP, nullable=True),
        sa.Column('created_at', _TIMESTAMP, nullable=False),
        sa.Column('updated_at', _TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_notification_urls'),
        sa.UniqueConstraint('url_hash',
                            name='uq_notification_urls_url_hash'),
        sqlite_autoincrement=True)
    op.create_table(
        'notification_events',
        sa.Column('id', _ID, primary_key=True, autoincrement=True),
        sa.Column('event_id', sa.String(36), nullable=False),
        sa.Column('order_id', sa.String(36), nullable=False),
        sa.Column('sequence', sa.Integer(), nullable=False),
        sa.Column('event', sa.String(32), nullable=False),
        sa.Column('status', sa.String(16), nullable=False),
        sa.Column('step', sa.String(64), nullable=True),
        sa.Column('detail', sa.JSON(), nullable=True),
        sa.Column('created_at', _TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_notification_events'),
        sa.ForeignKeyConstraint(
            ['order_id'], ['orders.id'], ondelete='CASCADE',
            name='fk_notification_events_order_id_orders'),
        sa.UniqueConstraint('event_id',
                            name='uq_notification_events_event_id'),
        sa.UniqueConstraint(
            'order_id', 'sequence',
            name='uq_notification_events_order_id_sequence'),
        sqlite_autoincrement=True)
    op.create_index('ix_order_steps_status_name', 'order_steps',
                    ['status', 'name'])
