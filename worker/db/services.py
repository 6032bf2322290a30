"""Repository of service heartbeats. SQL: Core UPDATE, INSERT and DELETE
statements on the ``Service`` entity, a heartbeat an UPDATE first and an
INSERT only when no row moved; one text query per dialect for the
server's clock (``database_time``); the ORM only for the operators' read
(``list_services``). Every function takes the session first.

A service is named ``pid@host`` like pulpcore's workers. It is alive while
its heartbeat is younger than ``[DEFAULT] service_down_time``.
"""

import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from worker.db import models
from worker.db import rows
from worker.db import statements


def heartbeat(session: orm.Session, name: str, kind: str, host: str,
              pid: int, now: datetime.datetime,
              clock_offset: float | None = None,
              topic: str | None = None) -> None:
    """Record that ``name`` is alive at ``now`` (insert it if missing).

    ``clock_offset``: seconds the database's clock is ahead of the
    process's host, as the process last measured it. ``topic``: the RPC
    topic a worker serves, written with its row.

    A process whose row was removed as dead while it was cut off from the
    database (an outage) comes back with its next heartbeat.
    """
    if not statements.changed(session, (
            sa.update(models.Service)
            .where(models.Service.name == name)
            .values(heartbeat_at=now, clock_offset=clock_offset)
            .execution_options(synchronize_session=False))):
        session.execute(sa.insert(models.Service).values(
            name=name, kind=kind, host=host, pid=pid, started_at=now,
            heartbeat_at=now, clock_offset=clock_offset, topic=topic))


# The database server's UTC time, by dialect, as a naive timestamp (SQLite
# gives text). Each reads the clock when the statement runs, not when the
# transaction began (PostgreSQL's now() would).
_SERVER_TIME = {
    'postgresql': "SELECT clock_timestamp() AT TIME ZONE 'UTC'",
    'mysql': 'SELECT UTC_TIMESTAMP(6)',
    'sqlite': "SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')",
}


def database_time(session: orm.Session) -> datetime.datetime:
    """Return the database server's UTC time now (naive).

    On SQLite, which runs in this process, that is this host's clock.
    """
    dialect = session.get_bind().dialect.name
    value: datetime.datetime | str = session.execute(
        sa.text(_SERVER_TIME[dialect])).scalar_one()
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value)
    return value.replace(tzinfo=None)


def record_pass(session: orm.Session, name: str,
                last_pass_at: datetime.datetime,
                next_pass_at: datetime.datetime | None) -> None:
    """Record when a retry daemon passed and when it will pass next."""
    session.execute(
        sa.update(models.Service)
        .where(models.Service.name == name)
        .values(last_pass_at=last_pass_at, next_pass_at=next_pass_at)
        .execution_options(synchronize_session=False))


def remove(session: orm.Session, name: str) -> None:
    """Delete the row of ``name`` (a clean stop)."""
    session.execute(
        sa.delete(models.Service)
        .where(models.Service.name == name)
        .execution_options(synchronize_session=False))


def live_names(session: orm.Session, alive_since: datetime.datetime,
               kind: str | None = None) -> set[str]:
    """Return the names (of ``kind``) whose heartbeat is at or after
    ``alive_since``."""
    query = (sa.select(models.Service.name)
             .where(models.Service.heartbeat_at >= alive_since))
    if kind:
        query = query.where(models.Service.kind == kind)
    return set(session.scalars(query))


def any_dead(session: orm.Session, alive_since: datetime.datetime) -> bool:
    """Return True if a row's heartbeat is before ``alive_since``."""
    return session.scalar(
        sa.select(models.Service.name)
        .where(models.Service.heartbeat_at < alive_since)
        .limit(1)) is not None


def delete_dead(session: orm.Session,
                alive_since: datetime.datetime) -> list[str]:
    """Delete the rows whose heartbeat is before ``alive_since``.

    Returns their names.
    """
    names = list(session.scalars(
        sa.select(models.Service.name)
        .where(models.Service.heartbeat_at < alive_since)))
    if names:
        session.execute(
            sa.delete(models.Service)
            .where(models.Service.name.in_(names),
                   models.Service.heartbeat_at < alive_since)
            .execution_options(synchronize_session=False))
    return names


def list_services(session: orm.Session,
                  kind: str | None = None) -> list[rows.Service]:
    """Return the service rows (of ``kind``), by kind then name."""
    query = sa.select(models.Service).order_by(models.Service.kind,
                                               models.Service.name)
    if kind:
        query = query.where(models.Service.kind == kind)
    return list(session.scalars(query))
