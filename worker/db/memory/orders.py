"""``worker.db.orders`` on the in-memory store."""

import collections
import copy
import uuid

from worker.db.memory import base
from worker.db import models


class InMemoryOrders(base.Repository):
    """``worker.db.orders`` on the in-memory store."""

    @base.writes
    def create(self, session, workflow, meta, now, priority=0):
        """Insert a PENDING order of ``workflow``'s type, and its steps."""
        order = base.OrderRecord(
            id=str(uuid.uuid4()), type=workflow.type_name,
            status=models.PENDING, meta=base.to_json(dict(meta or {})),
            error_reason=None, priority=models.check_priority(priority),
            created_at=now, updated_at=now)
        self._store.orders[order.id] = order
        base.insert_steps(self._store, order.id, workflow.names,
                          set(workflow.roots()), now)
        # NOTE: SQLAlchemy returns the object as built, before JSON.
        return base.replace(order, meta=dict(meta or {}))

    @base.reads
    def get(self, session, order_id):
        """Return the order with this id, or None."""
        return copy.deepcopy(self._store.orders.get(order_id))

    def with_steps(self, session, order_id):
        """Return ``(order, {name: step})``; ``(None, {})`` if none."""
        return self.with_steps_many(session, [order_id]).get(
            order_id, (None, {}))

    @base.reads
    def with_steps_many(self, session, order_ids):
        """Return ``{order_id: (order, {name: step})}`` of those that
        exist."""
        found = {order_id: (copy.deepcopy(self._store.orders[order_id]), {})
                 for order_id in order_ids
                 if order_id in self._store.orders}
        for step in sorted(self._store.steps.values(), key=base.step_key):
            if step.order_id in found:
                found[step.order_id][1][step.name] = copy.deepcopy(step)
        return found

    @base.reads
    def priorities(self, session, order_ids):
        """Return ``{id: priority}`` of those of ``order_ids`` that exist.
        """
        return {order_id: self._store.orders[order_id].priority
                for order_id in order_ids or ()
                if order_id in self._store.orders}

    @base.reads
    def list_orders(self, session, status=None, limit=None):
        """Return orders, oldest first, optionally only of ``status``."""
        found = sorted((order for order in self._store.orders.values()
                        if not status or order.status == status),
                       key=lambda order: (order.created_at, order.id))
        return copy.deepcopy(found[:limit or None])

    @base.reads
    def count_by_status(self, session):
        """Return ``{status: count}`` over every order."""
        return dict(collections.Counter(
            order.status for order in self._store.orders.values()))

    @base.reads
    def count_unfinished_by_status(self, session):
        """Return ``{status: count}`` of the orders not in a terminal
        status."""
        return dict(collections.Counter(
            order.status for order in self._store.orders.values()
            if order.status in models.UNFINISHED_STATUSES))

    @base.reads
    def count_unfinished_by_type(self, session):
        """Return ``{type: count}`` of the orders not in a terminal status.
        """
        return dict(collections.Counter(
            order.type for order in self._store.orders.values()
            if order.status not in models.TERMINAL_STATUSES))

    @base.writes
    def lock_live(self, session, order_id, now):
        """Lock a PENDING or CANCELLING order; False if it is not live.

        The store's one lock already serializes transactions: this only
        touches ``updated_at``, as the SQL update does.
        """
        order = self._store.orders.get(order_id)
        if order is None or order.status not in (models.PENDING,
                                                 models.CANCELLING):
            return False
        self._store.orders[order_id] = base.replace(
            order, updated_at=now)
        return True

    def _move(self, order_id, now, source, **values):
        order = self._store.orders.get(order_id)
        if order is None or order.status != source:
            return False
        self._store.orders[order_id] = base.replace(
            order, updated_at=now, **values)
        return True

    @base.writes
    def complete(self, session, order_id, now, meta):
        """Move a PENDING order to ACTIVE with ``meta`` as its meta."""
        return self._move(order_id, now, models.PENDING,
                          status=models.ACTIVE,
                          meta=base.to_json(dict(meta or {})))

    def complete_many(self, session, completions, now):
        """Complete several orders; how many moved to ACTIVE."""
        return sum(self.complete(session, order_id, now, meta)
                   for order_id, meta in completions)

    @base.writes
    def fail(self, session, order_id, now, reason):
        """Move a PENDING order to ERROR with ``reason``."""
        return self._move(order_id, now, models.PENDING,
                          status=models.ERROR, error_reason=reason)

    @base.writes
    def cancel(self, session, order_id, now, reason, compensating):
        """Move a PENDING order to CANCELLING or CANCELLED."""
        return self._move(order_id, now, models.PENDING,
                          status=(models.CANCELLING if compensating
                                  else models.CANCELLED),
                          error_reason=reason)

    @base.writes
    def end_cancel(self, session, order_id, now, failure=None):
        """Move a CANCELLING order to CANCELLED; ``failure`` appended."""
        values = {'status': models.CANCELLED}
        if failure is not None:
            order = self._store.orders.get(order_id)
            values['error_reason'] = '%s; %s' % (
                order.error_reason if order else 'cancelled', failure)
        return self._move(order_id, now, models.CANCELLING, **values)
