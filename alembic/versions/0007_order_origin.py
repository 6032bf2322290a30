"""Orders' origin: their project, idempotency key and request ids.

Orders that exist before this migration belong to the project
``default`` (``worker.db.models.DEFAULT_PROJECT``), have no idempotency
key and no request ids. ``(project_id, idempotency_key)`` is unique: the
second create with one key finds the first order instead of making
another (``worker.api.OrderAPI.create``). NULL keys never collide, on
every backend.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26
"""

from alembic import op
import sqlalchemy as sa

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

_DEFAULT_PROJECT = 'default'


def upgrade():
    op.add_column('orders', sa.Column(
        'project_id', sa.String(64), nullable=False,
        server_default=_DEFAULT_PROJECT))
    op.add_column('orders', sa.Column('idempotency_key', sa.String(255),
                                      nullable=True))
    op.add_column('orders', sa.Column('request_hash', sa.String(64),
                                      nullable=True))
    op.add_column('orders', sa.Column('request_id', sa.String(64),
                                      nullable=True))
    op.add_column('orders', sa.Column('global_request_id', sa.String(64),
                                      nullable=True))
    # A unique index rather than a constraint: SQLite adds one without
    # copying the table.
    op.create_index('uq_orders_project_id_idempotency_key', 'orders',
                    ['project_id', 'idempotency_key'], unique=True)
    op.create_index('ix_orders_project_id_created_at', 'orders',
                    ['project_id', 'created_at', 'id'])
