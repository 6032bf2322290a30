"""Each process's clock offset from the database server, at its heartbeat.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25
"""

from alembic import op
import sqlalchemy as sa

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade():
    # Nullable: rows of processes still running the previous release have
    # none until their next heartbeat after an upgrade of theirs.
    with op.batch_alter_table('services') as batch:
        batch.add_column(sa.Column('clock_offset', sa.Float(),
                                   nullable=True))
