"""``worker.db.locks`` on the in-memory store."""

import copy
import datetime

from oslo_db import exception as db_exc

from worker.db.memory import base
from worker.db import rows


class InMemoryLocks(base.Repository):
    """``worker.db.locks`` on the in-memory store."""

    @base.reads
    def get(self, session: base.InMemorySession,
            entity: str) -> rows.Lock | None:
        """Return the lock row of ``entity``, or None."""
        return copy.deepcopy(self._store.locks.get(entity))

    @base.writes
    def insert(self, session: base.InMemorySession, entity: str, host: str,
               owner_token: str, now: datetime.datetime) -> None:
        """Take the lock; raises ``DBDuplicateEntry`` if it is held."""
        if entity in self._store.locks:
            raise db_exc.DBDuplicateEntry(columns=['entity_to_lock'])
        self._store.locks[entity] = base.LockRecord(
            entity_to_lock=entity, worker_host_name=host,
            owner_token=owner_token, created_at=now)

    @base.writes
    def renew(self, session: base.InMemorySession, entity: str,
              owner_token: str, now: datetime.datetime) -> bool:
        """Extend our own lock; returns False if we no longer hold it."""
        lock = self._store.locks.get(entity)
        if lock is None or lock.owner_token != owner_token:
            return False
        self._store.locks[entity] = base.replace(lock, created_at=now)
        return True

    @base.writes
    def take_over(self, session: base.InMemorySession, entity: str,
                  host: str, owner_token: str, now: datetime.datetime,
                  older_than: datetime.datetime) -> bool:
        """Take the lock if it was last taken or renewed before
        ``older_than``; returns True if we took it."""
        lock = self._store.locks.get(entity)
        if lock is None or lock.created_at >= older_than:
            return False
        self._store.locks[entity] = base.replace(
            lock, worker_host_name=host, owner_token=owner_token,
            created_at=now)
        return True

    @base.writes
    def release(self, session: base.InMemorySession, entity: str,
                owner_token: str) -> bool:
        """Delete our own lock; returns False if we no longer held it."""
        lock = self._store.locks.get(entity)
        if lock is None or lock.owner_token != owner_token:
            return False
        del self._store.locks[entity]
        return True

    @base.writes
    def force_release(self, session: base.InMemorySession,
                      entity: str) -> bool:
        """Delete the lock of ``entity``; returns True if there was one."""
        return self._store.locks.pop(entity, None) is not None

    @base.writes
    def hold(self, session: base.InMemorySession, entity: str,
             now: datetime.datetime) -> bool:
        """Hold the row of ``entity`` (the fake's transactions are
        serialized already); False if there is none."""
        lock = self._store.locks.get(entity)
        if lock is None:
            return False
        self._store.locks[entity] = base.replace(lock, created_at=now)
        return True
