"""Schedules in a time zone, with an overlap policy.

- ``schedules.timezone``: the IANA time zone a cron expression is read
  in; ``UTC`` for every schedule before (which is how they ticked).
- ``schedules.overlap``: what a tick does while the order of the one
  before is still open; ``allow`` for every schedule before (they
  created each tick's order whatever the one before was doing).
- ``schedules.buffered_tick_at``: the one tick a ``buffer-one`` schedule
  holds back until its open order ends; NULL when none is held. Indexed:
  the retry daemons look for the held ticks at each look.

Additive only: three columns with defaults, and an index.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

# As worker.db.models.Timestamp: microseconds on MySQL/MariaDB.
_TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('schedules', sa.Column(
        'timezone', sa.String(64), nullable=False, server_default='UTC'))
    op.add_column('schedules', sa.Column(
        'overlap', sa.String(16), nullable=False, server_default='allow'))
    op.add_column('schedules', sa.Column(
        'buffered_tick_at', _TIMESTAMP, nullable=True))
    op.create_index('ix_schedules_buffered_tick_at', 'schedules',
                    ['buffered_tick_at'])
