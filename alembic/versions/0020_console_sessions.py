"""The operator console's logins.

- ``console_sessions``: one row per console login, found by the SHA-256
  of its cookie; the Keystone token it holds, the identity the token
  carries and the session's CSRF token. Shared by every process of
  ``barbican-retry-api``; ``ix_console_sessions_expires_at`` finds the
  expired rows to delete.

Additive only: a new table.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

# As worker.db.models.Timestamp: microseconds on MySQL/MariaDB.
_TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')

revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'console_sessions',
        sa.Column('id', sa.String(64), nullable=False),
        sa.Column('token', sa.Text(), nullable=False),
        sa.Column('csrf_token', sa.String(64), nullable=False),
        sa.Column('user_id', sa.String(64), nullable=False),
        sa.Column('user_name', sa.String(255), nullable=False),
        sa.Column('project_id', sa.String(64), nullable=False),
        sa.Column('project_name', sa.String(255), nullable=False),
        sa.Column('roles', sa.String(1024), nullable=False),
        sa.Column('created_at', _TIMESTAMP, nullable=False),
        sa.Column('expires_at', _TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint('id', name='pk_console_sessions'))
    op.create_index('ix_console_sessions_expires_at', 'console_sessions',
                    ['expires_at'])
