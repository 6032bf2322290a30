"""``worker.db.quotas``'s contract (``interfaces.Quotas``) on the
in-memory store."""

import datetime

from oslo_db import exception as db_exc

from worker.db.memory import base
from worker.db import models
from worker.db import rows

Session = base.InMemorySession
Moment = datetime.datetime


class InMemoryQuotas(base.Repository):
    """``worker.db.quotas`` on the in-memory store."""

    @base.reads
    def get(self, session: Session,
            project_id: str) -> rows.ProjectQuota | None:
        """The project's row, or None."""
        return self._store.quotas.get(project_id)

    @base.writes
    def insert(self, session: Session, project_id: str,
               pending_orders: int | None, now: Moment) -> None:
        """Add the project's row; ``DBDuplicateEntry`` if it exists."""
        if project_id in self._store.quotas:
            raise db_exc.DBDuplicateEntry(['project_id'])
        self._store.quotas[project_id] = base.QuotaRecord(
            project_id=project_id, pending_orders=pending_orders,
            created_at=now, updated_at=now, held_at=now)

    @base.writes
    def hold(self, session: Session, project_id: str, now: Moment) -> bool:
        """Mark the row held (the store's lock serializes writers)."""
        row = self._store.quotas.get(project_id)
        if row is None:
            return False
        self._store.quotas[project_id] = base.replace(row, held_at=now)
        return True

    @base.reads
    def count_pending(self, session: Session, project_id: str) -> int:
        """Count the project's PENDING orders."""
        return sum(1 for order in self._store.orders.values()
                   if (order.project_id, order.status) == (project_id,
                                                           models.PENDING))
