"""Across services: an order's trace, a signing secret per callback URL.

- ``orders.trace_context``: the W3C trace context (``traceparent`` and
  ``tracestate``, as a JSON object) of the request that created the
  order, so that a step run days later joins the order's trace; NULL when
  tracing was off.
- ``notification_urls.secret``: the Standard Webhooks secret
  (``whsec_`` and base64) that signs the requests to the URL; NULL until
  ``notification url set-secret``, when requests carry the deprecated
  signature only. ``previous_secret`` also signs until
  ``previous_secret_until``, so that a receiver can move to the new secret
  during a rotation.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-26
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import mysql

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None

_TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')


def upgrade():
    op.add_column('orders', sa.Column('trace_context', sa.JSON(),
                                      nullable=True))
    op.add_column('notification_urls', sa.Column(
        'secret', sa.String(255), nullable=True))
    op.add_column('notification_urls', sa.Column(
        'previous_secret', sa.String(255), nullable=True))
    op.add_column('notification_urls', sa.Column(
        'previous_secret_until', _TIMESTAMP, nullable=True))
