"""Repository of entity locks. SQL: Core INSERT, UPDATE and DELETE
statements through the session for every change, the row count being the
answer; the ORM only to read one lock by its key (``get``). Every
function takes the session first.

A lock is a row keyed by the entity's name: inserting it takes the lock
(the primary key refuses a second holder), deleting it releases it. Every
change after the insert names the holder's ``owner_token``, so a holder
whose lock was cleared as stale cannot renew or release its successor's.
"""

import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from worker.db import models
from worker.db import rows
from worker.db import statements


def get(session: orm.Session, entity: str) -> rows.Lock | None:
    """Return the lock row of ``entity``, or None."""
    return session.get(models.EntityLock, entity)


def insert(session: orm.Session, entity: str, host: str,
           owner_token: str, now: datetime.datetime) -> None:
    """Take the lock of ``entity``.

    :raises oslo_db.exception.DBDuplicateEntry: when another holder has it;
        the caller's transaction must then be rolled back.
    """
    session.execute(sa.insert(models.EntityLock).values(
        entity_to_lock=entity, worker_host_name=host,
        owner_token=owner_token, created_at=now))


def renew(session: orm.Session, entity: str, owner_token: str,
          now: datetime.datetime) -> bool:
    """Extend our own lock; returns False if we no longer hold it."""
    return statements.changed(session, (
        sa.update(models.EntityLock)
        .where(models.EntityLock.entity_to_lock == entity,
               models.EntityLock.owner_token == owner_token)
        .values(created_at=now)
        .execution_options(synchronize_session=False))) == 1


def take_over(session: orm.Session, entity: str, host: str,
              owner_token: str, now: datetime.datetime,
              older_than: datetime.datetime) -> bool:
    """Take the lock of ``entity`` from its holder if it was taken (or
    last renewed) before ``older_than``; returns True if we took it.

    For a lock row that is kept once its work ends, as a record of when
    it last ran (the purge's): the row's age says when it may run again.
    Two takers write the same row, so only one of them changes it (on a
    Galera cluster the other is refused at COMMIT, a deadlock).
    """
    return statements.changed(session, (
        sa.update(models.EntityLock)
        .where(models.EntityLock.entity_to_lock == entity,
               models.EntityLock.created_at < older_than)
        .values(worker_host_name=host, owner_token=owner_token,
                created_at=now)
        .execution_options(synchronize_session=False))) == 1


def release(session: orm.Session, entity: str, owner_token: str) -> bool:
    """Delete our own lock; returns False if we no longer held it."""
    return statements.changed(session, (
        sa.delete(models.EntityLock)
        .where(models.EntityLock.entity_to_lock == entity,
               models.EntityLock.owner_token == owner_token)
        .execution_options(synchronize_session=False))) == 1


def force_release(session: orm.Session, entity: str) -> bool:
    """Delete the lock of ``entity`` whoever holds it (operator action).

    Returns True if there was one.
    """
    return statements.changed(session, (
        sa.delete(models.EntityLock)
        .where(models.EntityLock.entity_to_lock == entity)
        .execution_options(synchronize_session=False))) > 0


def hold(session: orm.Session, entity: str,
         now: datetime.datetime) -> bool:
    """Hold the row of ``entity`` until the caller's transaction ends.

    For a row that serializes transactions rather than marks an owner
    (admission: ``worker.api.admission``): an UPDATE of it waits for
    any other transaction that holds it, on PostgreSQL and MySQL/MariaDB;
    SQLite's write transactions are serialized anyway. An UPDATE rather
    than ``SELECT ... FOR UPDATE``: on a Galera cluster two nodes' writes
    of the row conflict at COMMIT (one is refused as a deadlock, and run
    again), where a ``FOR UPDATE`` would lock on its own node only. Sets
    its ``created_at`` to ``now`` (when it was last held). Returns False,
    holding nothing, if there is no such row (the caller inserts it).
    """
    return statements.changed(session, (
        sa.update(models.EntityLock)
        .where(models.EntityLock.entity_to_lock == entity)
        .values(created_at=now)
        .execution_options(synchronize_session=False))) == 1
