"""The version of its type's graph that each order was created with.

- ``orders.workflow_version``: a stable hash of the graph (its steps, what
  each comes after, its compensation: ``worker.order_types.base.
  workflow_version``) the order was created with. A worker applies no
  other graph to the order: the orders of a graph the type no longer
  declares are left to a worker that declares it.

The orders that exist are left NULL: a migration does not load the
installed order types, and their graphs are not known here. NULL means
"the graph declared at the upgrade": the worker reads it as the declared
graph, the current one first, whose steps are exactly the order's rows
(``Workflow.of_order``), so that an order created before the upgrade still
finishes on its graph after its type changed, if the type keeps that
graph in ``previous_workflows``.

Additive only: a new nullable column, no index (the upgrade check counts
the open orders by type and version through ``ix_orders_type_status``).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None


def upgrade():
    op.add_column('orders', sa.Column('workflow_version', sa.String(64),
                                      nullable=True))
