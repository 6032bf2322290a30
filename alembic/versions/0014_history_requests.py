"""Who asked for a cancel or a resume, in the order's history.

- ``order_step_runs.requested_by``: NULL on a run of a step, as every
  row before; on a row that records a cancel or a resume (step
  ``order:cancel`` or ``order:resume``, result ``requested``), who
  asked, as JSON: ``actor`` (``user`` for a REST caller, ``operator``
  for ``barbican-retry-manage`` on the host), ``user_id``,
  ``project_id``, ``request_id`` and, for an operator, ``os_user``
  (``name@host``).

Additive only: a new nullable column; the rows before keep NULL.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('order_step_runs', sa.Column(
        'requested_by', sa.JSON(), nullable=True))
