"""Repository of entity locks. SQL: Core INSERT, UPDATE and DELETE
statements through the session for every change, the row count being the
answer; the ORM only to read one lock by its key (``get``). Every
function takes the session first.

A lock is a row keyed by the entity's name: inserting it takes the lock
(the primary key refuses a second holder), deleting it releases it. Every
change after the insert names the holder's ``owner_token``, so a holder
whose lock was cleared as stale cannot renew or release its successor's.
"""

import sqlalchemy as sa

from worker.db import models


def get(session, entity):
    """Return the lock row of ``entity``, or None."""
    return session.get(models.EntityLock, entity)


def insert(session, entity, host, token, now):
    """Take the lock of ``entity``.

    :raises oslo_db.exception.DBDuplicateEntry: when another holder has it;
        the caller's transaction must then be rolled back.
    """
    session.execute(sa.insert(models.EntityLock).values(
        entity_to_lock=entity, worker_host_name=host, owner_token=token,
        created_at=now))


def renew(session, entity, token, now):
    """Extend our own lock; returns False if we no longer hold it."""
    result = session.execute(
        sa.update(models.EntityLock)
        .where(models.EntityLock.entity_to_lock == entity,
               models.EntityLock.owner_token == token)
        .values(created_at=now)
        .execution_options(synchronize_session=False))
    return result.rowcount == 1


def release(session, entity, token):
    """Delete our own lock; returns False if we no longer held it."""
    result = session.execute(
        sa.delete(models.EntityLock)
        .where(models.EntityLock.entity_to_lock == entity,
               models.EntityLock.owner_token == token)
        .execution_options(synchronize_session=False))
    return result.rowcount == 1


def force_release(session, entity):
    """Delete the lock of ``entity`` whoever holds it (operator action).

    Returns True if there was one.
    """
    result = session.execute(
        sa.delete(models.EntityLock)
        .where(models.EntityLock.entity_to_lock == entity)
        .execution_options(synchronize_session=False))
    return result.rowcount > 0
