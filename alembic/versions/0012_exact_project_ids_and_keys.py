"""Project ids and idempotency keys compared exactly on MySQL and MariaDB.

Their columns took the server's default collation, ``utf8mb4_unicode_ci``,
which ignores case and trailing spaces: the project ``TENB`` read the
orders of ``tenB`` (and of ``tenB ``), and an idempotency key ``KEY``
returned the order of ``key``. ``orders.project_id``,
``orders.idempotency_key`` and ``schedules.project_id`` now have a binary
collation without padding (``worker.db.models.exact_collation``):
``utf8mb4_nopad_bin`` on MariaDB, ``utf8mb4_0900_bin`` on MySQL 8.

No row changes and none can collide: an exact comparison tells more
values apart, never fewer, so the unique index on ``(project_id,
idempotency_key)`` holds. The indexes on the columns are rebuilt with
them. SQLite and PostgreSQL compared exactly already: nothing to do.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-28
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0012'
down_revision = '0011'
branch_labels = None
depends_on = None

# (table, column, length, nullable, server default)
_COLUMNS = (
    ('orders', 'project_id', 64, False, 'default'),
    ('orders', 'idempotency_key', 255, True, None),
    ('schedules', 'project_id', 64, False, None),
)


def _collation(dialect):
    # As worker.db.models.exact_collation, which a migration does not
    # import: the models change after it.
    if getattr(dialect, 'is_mariadb', False):
        return 'utf8mb4_nopad_bin'
    return 'utf8mb4_0900_bin'


def upgrade():
    bind = op.get_bind()
    if bind.dialect.name not in ('mysql', 'mariadb'):
        return
    collation = _collation(bind.dialect)
    for table, column, length, nullable, default in _COLUMNS:
        op.alter_column(
            table, column,
            type_=mysql.VARCHAR(length, charset='utf8mb4',
                                collation=collation),
            existing_type=sa.String(length), existing_nullable=nullable,
            existing_server_default=default)
