"""Search by metadata: the index of PostgreSQL.

- ``ix_orders_meta_path_ops`` (PostgreSQL only): a GIN index with
  ``jsonb_path_ops`` over ``CAST(meta AS JSONB)``, which serves the
  containment (``@>``) that ``worker.db.meta_search`` asks for an
  equality on a path of the metadata. The column stays ``json``: the
  index is over its cast, so no row is rewritten, and the models keep
  one column type on every backend. ``jsonb_path_ops`` is smaller and
  faster than the default ``jsonb_ops`` for containment, the only
  operator asked.

MariaDB and SQLite get no index: neither can index every path of a JSON
column (a generated column indexes one path); a search by metadata reads
the rows the other filters' indexes select (doc/operations.md,
"Searching by metadata").

Additive only. Not in ``worker.db.models``: an expression index of one
backend, which autogenerate does not compare.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28
"""

from alembic import op

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None

_NAME = 'ix_orders_meta_path_ops'


def upgrade():
    if op.get_bind().dialect.name != 'postgresql':
        return
    op.execute('CREATE INDEX IF NOT EXISTS %s ON orders '
               'USING gin ((CAST(meta AS JSONB)) jsonb_path_ops)' % _NAME)


def downgrade():
    if op.get_bind().dialect.name != 'postgresql':
        return
    op.execute('DROP INDEX IF EXISTS %s' % _NAME)
