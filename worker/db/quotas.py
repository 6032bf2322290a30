"""Repository of per-project quotas (``project_quotas``). What a create
counts (``get``, ``insert``, ``hold``, ``count_pending``) is in the
contract (``interfaces.Quotas``, faked: the retry daemon's schedule ticks
create orders too); the admin's overrides (``overrides``,
``set_override``) are the API's queries (``queries.QuotaQueries``).

A row exists for each project whose creates are counted: its
``pending_orders`` is the admin's override or NULL (the default of
``[quota] pending_orders_per_project`` applies). Every function takes the
session first.
"""

import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from worker.db import models
from worker.db import rows
from worker.db import statements


def get(session: orm.Session, project_id: str) -> rows.ProjectQuota | None:
    """The project's row, or None if its creates were never counted and
    it has no override."""
    return session.get(models.ProjectQuota, project_id)


def overrides(session: orm.Session) -> list[rows.ProjectQuota]:
    """The rows with an override, by project id."""
    return list(session.scalars(
        sa.select(models.ProjectQuota)
        .where(models.ProjectQuota.pending_orders.is_not(None))
        .order_by(models.ProjectQuota.project_id)))


def insert(session: orm.Session, project_id: str,
           pending_orders: int | None, now: datetime.datetime) -> None:
    """Add the project's row.

    :raises oslo_db.exception.DBDuplicateEntry: another transaction added
        it first; roll back and use the row that exists.
    """
    session.execute(sa.insert(models.ProjectQuota).values(
        project_id=project_id, pending_orders=pending_orders,
        created_at=now, updated_at=now, held_at=now))


def set_override(session: orm.Session, project_id: str,
                 pending_orders: int | None,
                 now: datetime.datetime) -> bool:
    """Set (or, with None, clear) the project's override; False if the
    project has no row (``insert`` it)."""
    return statements.changed(session, (
        sa.update(models.ProjectQuota)
        .where(models.ProjectQuota.project_id == project_id)
        .values(pending_orders=pending_orders, updated_at=now)
        .execution_options(synchronize_session=False))) == 1


def hold(session: orm.Session, project_id: str,
         now: datetime.datetime) -> bool:
    """Hold the project's row until the caller's transaction ends (an
    UPDATE, as ``locks.hold``: it waits for any other holder, and two
    Galera nodes' holds conflict at COMMIT). False, holding nothing, if
    the project has no row."""
    return statements.changed(session, (
        sa.update(models.ProjectQuota)
        .where(models.ProjectQuota.project_id == project_id)
        .values(held_at=now)
        .execution_options(synchronize_session=False))) == 1


def count_pending(session: orm.Session, project_id: str) -> int:
    """Count the project's PENDING orders: one range of
    ``ix_orders_project_id_status``."""
    return session.execute(
        sa.select(sa.func.count()).select_from(models.Order)
        .where(models.Order.project_id == project_id,
               models.Order.status == models.PENDING)).scalar_one()
