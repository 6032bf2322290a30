"""Flow control: resource slots, start rates, waits, orders that start
later, schedules.

- ``resource_slots``: one row per slot of a resource key held by a
  running step (``(key, slot)`` unique: at most ``capacity`` holders of a
  key); freed with the step's result, or when it is taken back.
- ``resource_starts``: for a key with a ``rate``, one row per start the
  period allows, holding when it was last used: a start takes the row
  whose last use is a whole period old.
- ``order_retry_tasks.waiting_for``: the resource key a step's retry row
  waits for a slot of (NULL for other retry rows); a step that frees a
  slot of the key wakes the oldest.
- ``orders.not_before``: when the order's first steps run (NULL: at
  once); ``orders.schedule_id``: the schedule that created it.
- ``ix_orders_type_status``: the PENDING orders of one type
  (``[order_type:T] max_pending``).
- ``schedules``: orders created every interval or on a cron expression.
- ``services.topic``: the RPC topic a worker serves (``barbican-worker
  --topic``; NULL for a retry daemon), which ``service list`` shows.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-26
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

_TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def upgrade():
    op.create_table(
        'resource_slots',
        sa.Column('key', sa.String(255), nullable=False),
        sa.Column('slot', sa.Integer(), nullable=False),
        sa.Column('order_id', sa.String(36), nullable=False),
        sa.Column('step', sa.String(64), nullable=False),
        sa.Column('generation', sa.Integer(), nullable=False),
        sa.Column('taken_at', _TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint('key', 'slot', name='pk_resource_slots'),
        sa.ForeignKeyConstraint(
            ['order_id'], ['orders.id'], ondelete='CASCADE',
            name='fk_resource_slots_order_id_orders'))
    op.create_index('ix_resource_slots_order_id_step', 'resource_slots',
                    ['order_id', 'step'])
    op.create_table(
        'resource_starts',
        sa.Column('key', sa.String(255), nullable=False),
        sa.Column('slot', sa.Integer(), nullable=False),
        sa.Column('started_at', _TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint('key', 'slot', name='pk_resource_starts'))
    op.add_column('order_retry_tasks', sa.Column(
        'waiting_for', sa.String(255), nullable=True))
    op.create_index('ix_order_retry_tasks_waiting_for', 'order_retry_tasks',
                    ['waiting_for', 'id'])
    op.add_column('orders', sa.Column('not_before', _TIMESTAMP,
                                      nullable=True))
    op.add_column('orders', sa.Column('schedule_id', sa.String(36),
                                      nullable=True))
    op.create_index('ix_orders_type_status', 'orders', ['type', 'status'])
    op.create_index('ix_orders_schedule_id', 'orders', ['schedule_id'])
    op.create_table(
        'schedules',
        sa.Column('id', sa.String(36), nullable=False),
        sa.Column('project_id', sa.String(64), nullable=False),
        sa.Column('type', sa.String(32), nullable=False),
        sa.Column('meta', sa.JSON(), nullable=False),
        sa.Column('priority', sa.SmallInteger(), nullable=False,
                  server_default='0'),
        sa.Column('every_seconds', sa.Integer(), nullable=True),
        sa.Column('cron', sa.String(255), nullable=True),
        sa.Column('next_tick_at', _TIMESTAMP, nullable=False),
        sa.Column('last_tick_at', _TIMESTAMP, nullable=True),
        sa.Column('last_order_id', sa.String(36), nullable=True),
        sa.Column('created_at', _TIMESTAMP, nullable=False),
        sa.Column('updated_at', _TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_schedules'))
    op.create_index('ix_schedules_next_tick_at', 'schedules',
                    ['next_tick_at'])
    op.add_column('services', sa.Column('topic', sa.String(255),
                                        nullable=True))
