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

- ``notification_urls.url`` and ``url_hash`` canonical: a row of the
  release before holds the URL as it was given (``http://h:8080``),
  while orders, ``[notifications] endpoints`` and the commands now name
  its canonical text (``http://h:8080/``); left as it was, that row would
  keep its secret and owner while new orders got a second row with
  neither. Each row is rewritten in place, its id (hence its deliveries)
  unchanged, with ``worker.common.targets.canonical``, the
  function every new URL goes through. Two kinds of row are left as they
  are, each named in a WARNING: one whose URL is refused now (a host
  neither a DNS name nor an IP literal, a fragment…; its deliveries
  fail as a request to it would), and one whose canonical text another
  row already has (two spellings of one URL: new orders get the
  canonical row; ``notification url list`` shows both, and the operator
  moves a secret or owner with ``set-secret`` and ``set-owner``).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28
"""

import logging

from alembic import op
import sqlalchemy as sa

from worker.common import targets
from worker.db import models

# The module that runs the migrations: its WARNINGs reach db upgrade's log.
LOG = logging.getLogger('worker.db.migration')

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

_URLS = sa.table('notification_urls', sa.column('id'), sa.column('url'),
                 sa.column('url_hash'), sa.column('secret'),
                 sa.column('project_id'))
_STEPS = sa.table('order_steps', sa.column('order_id'), sa.column('name'))
_ORDERS = sa.table('orders', sa.column('id'), sa.column('project_id'))


def upgrade():
    op.add_column('notification_urls', sa.Column(
        'project_id', sa.String(64), nullable=True))
    connection = op.get_bind()
    _give_owners(connection)
    _canonicalise(connection)


def _give_owners(connection):
    """The project of its orders to each URL with a secret whose orders
    are all of one project."""
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


def _canonicalise(connection):
    """Each URL's row canonical in place, unless its URL is refused now
    or another row has its canonical text (both logged)."""
    found = dict(connection.execute(
        sa.select(_URLS.c.id, _URLS.c.url).order_by(_URLS.c.id)).all())
    taken = set(found.values())
    for url_id, url in found.items():
        try:
            canonical = targets.canonical(url)
        except targets.RefusedUrl as exc:
            LOG.warning('notification URL %d left as it is: %s', url_id, exc)
            continue
        if canonical == url:
            continue
        if canonical in taken:
            LOG.warning('notification URL %d (%s) left as it is: another '
                        'row is %s', url_id, url, canonical)
            continue
        connection.execute(sa.update(_URLS).where(_URLS.c.id == url_id)
                           .values(url=canonical,
                                   url_hash=models.url_hash(canonical)))
        taken.discard(url)
        taken.add(canonical)
