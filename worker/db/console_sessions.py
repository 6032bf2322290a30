"""Repository of the operator console's logins (``console_sessions``).

The API's queries only (``queries.ConsoleSessionQueries``): the worker
and the retry daemon never read them. Every function takes the session
first; the caller owns the transaction.
"""

import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from worker.db import models
from worker.db import rows


def insert(session: orm.Session, values: dict) -> None:
    """Add a login; ``values`` are the columns of ``ConsoleSession``."""
    session.execute(sa.insert(models.ConsoleSession).values(**values))


def get_live(session: orm.Session, session_id: str,
             now: datetime.datetime) -> rows.ConsoleSession | None:
    """The login ``session_id`` if it has not expired at ``now``."""
    return session.scalars(
        sa.select(models.ConsoleSession)
        .where(models.ConsoleSession.id == session_id,
               models.ConsoleSession.expires_at > now)).first()


def delete(session: orm.Session, session_id: str) -> bool:
    """End the login ``session_id``; False if there was none."""
    return session.execute(
        sa.delete(models.ConsoleSession)
        .where(models.ConsoleSession.id == session_id)
        .execution_options(synchronize_session=False)).rowcount == 1


def delete_expired(session: orm.Session, now: datetime.datetime,
                   limit: int = 100) -> int:
    """Delete up to ``limit`` logins expired at ``now`` (one range of
    ``ix_console_sessions_expires_at``); how many went."""
    ids = list(session.scalars(
        sa.select(models.ConsoleSession.id)
        .where(models.ConsoleSession.expires_at <= now).limit(limit)))
    if not ids:
        return 0
    session.execute(
        sa.delete(models.ConsoleSession)
        .where(models.ConsoleSession.id.in_(ids))
        .execution_options(synchronize_session=False))
    return len(ids)
