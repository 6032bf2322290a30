"""``worker.db.orders`` on the in-memory store."""

import collections
import collections.abc as abc
import copy
import dataclasses
import datetime
import typing
import uuid

from oslo_db import exception as db_exception

from worker.db.memory import base
from worker.db import models
from worker.db import orders
from worker.db import rows
from worker.order_types import base as order_types

Any = typing.Any
Session = base.InMemorySession
Moment = datetime.datetime


class InMemoryOrders(base.Repository):
    """``worker.db.orders`` on the in-memory store."""

    @base.writes
    def create(self, session: Session, workflow: order_types.Workflow,
               meta: abc.Mapping[str, Any] | None, now: Moment,
               priority: int = 0,
               origin: orders.Origin = orders.NO_ORIGIN,
               not_before: Moment | None = None) -> rows.Order:
        """Insert a PENDING order of ``workflow``'s type, and its steps
        (its first ones not dispatched if it starts ``not_before``).

        :raises oslo_db.exception.DBDuplicateEntry: the project has an
            order with the origin's idempotency key.
        """
        if origin.idempotency_key is not None and self._by_key(
                origin.project_id, origin.idempotency_key):
            raise db_exception.DBDuplicateEntry(
                columns=['project_id', 'idempotency_key'])
        order = base.OrderRecord(
            id=str(uuid.uuid4()), type=workflow.type_name,
            status=models.PENDING, meta=base.to_json(dict(meta or {})),
            error_reason=None, priority=models.check_priority(priority),
            created_at=now, updated_at=now, not_before=not_before,
            workflow_version=workflow.version,
            **dataclasses.asdict(origin))
        self._store.orders[order.id] = order
        base.insert_steps(self._store, order.id, workflow.names,
                          set(workflow.roots()), now,
                          dispatched=not_before is None)
        # NOTE: SQLAlchemy returns the object as built, before JSON.
        return base.replace(order, meta=dict(meta or {}))

    @base.reads
    def get(self, session: Session, order_id: str) -> rows.Order | None:
        """Return the order with this id, or None."""
        return copy.deepcopy(self._store.orders.get(order_id))

    @base.reads
    def find_by_key(self, session: Session, project_id: str,
                    idempotency_key: str) -> rows.Order | None:
        """Return the project's order created with ``idempotency_key``."""
        return copy.deepcopy(self._by_key(project_id, idempotency_key))

    def _by_key(self, project_id: str,
                idempotency_key: str) -> rows.Order | None:
        for order in self._store.orders.values():
            if (order.project_id, order.idempotency_key) == (
                    project_id, idempotency_key):
                return order
        return None

    @base.reads
    def status_of(self, session: Session, order_id: str) -> str | None:
        """Return the order's status, or None if there is no such order.
        """
        order = self._store.orders.get(order_id)
        return order.status if order else None

    @base.reads
    def with_steps_many(self, session: Session,
                        order_ids: abc.Collection[str]
                        ) -> dict[str, orders.WithSteps]:
        """Return ``{order_id: (order, {name: step})}`` of those that
        exist."""
        found: dict[str, orders.WithSteps] = {
            order_id: (copy.deepcopy(self._store.orders[order_id]), {})
            for order_id in order_ids if order_id in self._store.orders}
        for step in sorted(self._store.steps.values(), key=base.step_key):
            if step.order_id in found:
                found[step.order_id][1][step.name] = copy.deepcopy(step)
        return found

    @base.reads
    def retry_origins(self, session: Session,
                      order_ids: abc.Collection[str]
                      ) -> dict[str, orders.RetryOrigin]:
        """Return ``{id: RetryOrigin}`` of those of ``order_ids`` that
        exist."""
        found = {}
        for order_id in order_ids or ():
            order = self._store.orders.get(order_id)
            if order is not None:
                found[order_id] = orders.RetryOrigin(
                    order.priority, order.request_id,
                    order.global_request_id)
        return found

    @base.reads
    def count_pending(self, session: Session, order_type: str) -> int:
        """Count the PENDING orders of ``order_type``."""
        return sum(1 for order in self._store.orders.values()
                   if (order.type, order.status) == (order_type,
                                                     models.PENDING))

    @base.reads
    def count_unfinished_by_status(self,
                                   session: Session) -> dict[str, int]:
        """Return ``{status: count}`` of the orders not in a terminal
        status."""
        return dict(collections.Counter(
            order.status for order in self._store.orders.values()
            if order.status in models.UNFINISHED_STATUSES))

    @base.writes
    def lock_live(self, session: Session, order_id: str,
                  now: Moment) -> bool:
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

    def _move(self, order_id: str, now: Moment, source: str,
              **values: Any) -> bool:
        order = self._store.orders.get(order_id)
        if order is None or order.status != source:
            return False
        self._store.orders[order_id] = base.replace(
            order, updated_at=now, **values)
        return True

    @base.writes
    def _complete(self, session: Session, order_id: str, now: Moment,
                  meta: abc.Mapping[str, Any] | None) -> bool:
        """Move a PENDING order to ACTIVE with ``meta`` as its meta."""
        return self._move(order_id, now, models.PENDING,
                          status=models.ACTIVE,
                          meta=base.to_json(dict(meta or {})))

    def complete_many(
            self, session: Session,
            completions: abc.Iterable[
                tuple[str, abc.Mapping[str, Any] | None]],
            now: Moment) -> int:
        """Complete several orders; how many moved to ACTIVE."""
        return sum(self._complete(session, order_id, now, meta)
                   for order_id, meta in completions)

    @base.writes
    def fail(self, session: Session, order_id: str, now: Moment,
             reason: str) -> bool:
        """Move a PENDING order to ERROR with ``reason``."""
        return self._move(order_id, now, models.PENDING,
                          status=models.ERROR, error_reason=reason)

    def _failed_at(self, order: rows.Order) -> Moment:
        """When ``order`` went to ERROR: when its FAILED step ended
        (``orders._failed_at``), else its ``updated_at``."""
        ended = [step.finished_at for step in self._store.steps.values()
                 if step.order_id == order.id and
                 step.status == models.STEP_FAILED and
                 step.finished_at is not None]
        return max(ended, default=order.updated_at)

    @base.writes
    def end_cancel(self, session: Session, order_id: str, now: Moment,
                   failure: str | None = None) -> bool:
        """Move a CANCELLING order to CANCELLED; ``failure`` appended."""
        values = {'status': models.CANCELLED}
        if failure is not None:
            order = self._store.orders.get(order_id)
            values['error_reason'] = '%s; %s' % (
                order.error_reason if order else 'cancelled', failure)
        return self._move(order_id, now, models.CANCELLING, **values)
