"""The project that owns a callback URL with a secret of its own.

- ``notification_urls.project_id``: once a URL has a secret of its own,
  only the orders of this project may name it (another project's order
  naming it is refused), so that no project can have its events signed
  with another project's receiver's key. NULL: any project may (a URL
  without a secret of its own, or one the operator made global).

The URLs that already have a secret are given the project of the orders
subscribed to them when those are all of one project; a URL whose orders
are of several projects, or that no order names, stays global, as it
was: ``notification url list`` shows each URL's project, and
``notification url set-owner`` changes it.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

_URLS = sa.table('notification_urls', sa.column('id'), sa.column('secret'),
                 sa.column('project_id'))
_STEPS = sa.table('order_steps', sa.column('order_id'), sa.column('name'))
_ORDERS = sa.table('orders', sa.column('id'), sa.column('project_id'))


def upgrade():
    op.add_column('notification_urls', sa.Column(
        'project_id', sa.String(64), nullable=True))
    connection = op.get_bind()
    for (url_id,) in connection.execute(
            sa.select(_URLS.c.id).where(_URLS.c.secret.is_not(None))):
        projects = connection.execute(
            sa.select(_ORDERS.c.project_id).distinct()
            .select_from(_STEPS.join(_ORDERS,
                                     _ORDERS.c.id == _STEPS.c.order_id))
            .where(_STEPS.c.name == 'notify:%d' % url_id)
            .limit(2)).scalars().all()
        if len(projects) == 1:
            connection.execute(sa.update(_URLS)
                               .where(_URLS.c.id == url_id)
                               .values(project_id=projects[0]))
