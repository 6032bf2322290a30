"""``worker.db.purge`` on the in-memory store."""

import collections.abc as abc
import datetime
import typing

from worker.db.memory import base
from worker.db import models
from worker.db import rows

Session = base.InMemorySession
Moment = datetime.datetime


class InMemoryPurge(base.Repository):
    """``worker.db.purge`` on the in-memory store.

    Transactions are serialized: the lock that ``delete`` takes first on
    a real database is the store's own.
    """

    def _finished_before(self, statuses: abc.Collection[str],
                         before: Moment) -> list[str]:
        """Ids of the orders in ``statuses`` last changed before
        ``before``, oldest first within each status."""
        chosen = [order for order in self._store.orders.values()
                  if order.status in statuses and order.updated_at < before]
        order_of = {status: index for index, status in enumerate(statuses)}
        chosen.sort(key=lambda order: (order_of[order.status],
                                       order.updated_at))
        return [order.id for order in chosen]

    def _counts(self, order_ids: abc.Collection[str],
                delete: bool) -> rows.PurgeCounts:
        """Count the rows of ``order_ids`` per table; ``delete`` them."""
        ids = set(order_ids)
        store = self._store
        orders = _of(store.orders, lambda order: order.id in ids, delete)
        # Their slots go with them (the foreign key's CASCADE).
        _of(store.slots, lambda holder: holder[0] in ids, delete)
        return rows.PurgeCounts(orders, *(
            _of(table, lambda row: row.order_id in ids, delete)
            for table in (store.steps, store.tasks, store.events,
                          store.runs, store.signals)))

    @base.reads
    def select_batch(self, session: Session, statuses: abc.Collection[str],
                     before: Moment, limit: int) -> list[str]:
        """Up to ``limit`` ids of orders to purge, oldest first."""
        return self._finished_before(models.check_purgeable(statuses),
                                     before)[:limit]

    @base.writes
    def delete(self, session: Session, order_ids: abc.Collection[str],
               statuses: abc.Collection[str], before: Moment
               ) -> rows.PurgeCounts:
        """Delete those of ``order_ids`` still to purge, with their rows.
        """
        still = set(self._finished_before(models.check_purgeable(statuses),
                                          before))
        return self._counts([i for i in order_ids if i in still], True)

    @base.reads
    def count(self, session: Session, statuses: abc.Collection[str],
              before: Moment) -> rows.PurgeCounts:
        """What a purge would delete now, per table."""
        return self._counts(self._finished_before(
            models.check_purgeable(statuses), before), False)


def _of(table: dict[typing.Any, typing.Any],
        belongs: abc.Callable[[typing.Any], bool], delete: bool) -> int:
    """How many rows of ``table`` belong; ``delete`` them."""
    keys = [key for key, row in table.items() if belongs(row)]
    if delete:
        for key in keys:
            del table[key]
    return len(keys)
