"""``worker.db.retry_tasks`` on the in-memory store."""

import collections.abc as abc
import copy
import datetime
import json
import typing

from worker.db.memory import base
from worker.db import models
from worker.db import retry_tasks
from worker.db import rows

Any = typing.Any
Session = base.InMemorySession
Moment = datetime.datetime


def _due_key(task: rows.RetryTask) -> tuple[int, Moment, int]:
    """Where ``due`` puts a row: priority descending, retry_at, id."""
    return (-task.priority, task.retry_at, task.id)


class InMemoryRetryTasks(base.Repository):
    """``worker.db.retry_tasks`` on the in-memory store."""

    @base.writes
    def _add(self, session: Session, order_id: str, retry_task: str,
             retry_at: Moment, args: abc.Iterable[Any] = (),
             kwargs: abc.Mapping[str, Any] | None = None,
             retry_count: int = 0, now: Moment | None = None,
             priority: int = 0, waiting_for: str | None = None) -> int:
        """Insert a retry row for ``order_id``; returns its id."""
        models.check_priority(priority)
        if order_id not in self._store.orders:
            raise base.missing_order('order_retry_tasks')
        task = base.RetryTaskRecord(
            id=next(self._store.task_ids), order_id=order_id,
            retry_task=retry_task, retry_at=retry_at,
            retry_args=json.dumps(list(args)),
            retry_kwargs=json.dumps(dict(kwargs or {})),
            retry_count=retry_count, priority=priority, parked=False,
            park_reason=None, created_at=now or retry_at,
            waiting_for=waiting_for)
        self._store.tasks[task.id] = task
        return task.id

    def add_many(self, session: Session,
                 rows: abc.Collection[abc.Mapping[str, Any]]) -> None:
        """Insert several retry rows (dicts of ``_add``'s arguments)."""
        for arguments in rows:
            self._add(session, **arguments)

    def _unparked(self) -> list[rows.RetryTask]:
        return [task for task in self._store.tasks.values()
                if not task.parked]

    @base.reads
    def due(self, session: Session, now: Moment, limit: int,
            after: retry_tasks.Key | None = None, traces: bool = False
            ) -> list[retry_tasks.DueTask]:
        """Up to ``limit`` unparked due rows, highest priority first, then
        by (retry_at, id); after the row whose ``DueTask.key`` is
        ``after``; with their orders' ``trace_context`` if ``traces``."""
        start = None
        if after is not None:
            priority, retry_at, task_id = after
            start = (-priority, retry_at, task_id)
        found = sorted((task for task in self._unparked()
                        if task.retry_at <= now and
                        (start is None or _due_key(task) > start)),
                       key=_due_key)
        return [retry_tasks.DueTask(
            task.id, task.order_id, task.retry_task, task.retry_at,
            task.retry_args, task.retry_kwargs, task.retry_count,
            task.priority,
            (task.order_id, task.retry_task) in self._store.steps,
            self._order_type(task.order_id),
            self._trace_context(task.order_id) if traces else None)
            for task in found[:limit]]

    def _order_type(self, order_id: str) -> str | None:
        order = self._store.orders.get(order_id)
        return None if order is None else order.type

    def _trace_context(self, order_id: str) -> Any:
        order = self._store.orders.get(order_id)
        return None if order is None else copy.deepcopy(order.trace_context)

    @base.reads
    def any_due(self, session: Session, now: Moment) -> bool:
        """Return True if an unparked row is due at ``now``."""
        return any(task.retry_at <= now for task in self._unparked())

    @base.reads
    def next_due_after(self, session: Session,
                       moment: Moment) -> Moment | None:
        """The earliest ``retry_at`` after ``moment`` of an unparked row."""
        return min((task.retry_at for task in self._unparked()
                    if task.retry_at > moment), default=None)

    @base.reads
    def count_due(self, session: Session, now: Moment) -> int:
        """Count the unparked rows due at ``now``."""
        return sum(task.retry_at <= now for task in self._unparked())

    @base.reads
    def count_parked(self, session: Session) -> int:
        """Count the parked rows."""
        return sum(task.parked for task in self._store.tasks.values())

    @base.writes
    def _delete(self, session: Session,
                task_ids: abc.Collection[int]) -> int:
        """Delete the rows with these ids; returns how many were."""
        return sum(self._store.tasks.pop(task_id, None) is not None
                   for task_id in set(task_ids or ()))

    @base.writes
    def delete_for_order(self, session: Session, order_id: str,
                         step: str | None = None) -> None:
        """Delete every retry row of one order, or of one of its steps."""
        self._delete(session, [
            task.id for task in self._store.tasks.values()
            if task.order_id == order_id and
            (task.retry_task == step if step is not None else
             not models.is_delivery(task.retry_task))])

    def delete_for_steps(self, session: Session,
                         keys: abc.Collection[tuple[str, str]]) -> None:
        """Delete the retry rows of these ``(order_id, step)``."""
        for order_id, step in keys:
            self.delete_for_order(session, order_id, step)

    @base.writes
    def delete_as_read(self, session: Session,
                       rows: abc.Collection[retry_tasks.DueTask]
                       ) -> set[tuple[str, str]]:
        """Delete rows (``DueTask``) by id; the (order, step) of those
        deleted."""
        deleted = [self._store.tasks.pop(row.id) for row in rows or ()
                   if row.id in self._store.tasks]
        return {(task.order_id, task.retry_task) for task in deleted}

    @base.writes
    def park(self, session: Session, row: retry_tasks.DueTask,
             reason: str) -> None:
        """Set a row (as it was read, by id) aside."""
        task = self._store.tasks.get(row.id)
        if task is not None:
            self._store.tasks[task.id] = base.replace(
                task, parked=True, park_reason=reason)

    @base.reads
    def list_tasks(self, session: Session, parked: bool | None = None,
                   order_id: str | None = None) -> list[rows.RetryTask]:
        """Return retry rows by retry_at, filtered on the arguments."""
        return copy.deepcopy(sorted(
            (task for task in self._store.tasks.values()
             if (parked is None or task.parked == parked) and
             (not order_id or task.order_id == order_id)),
            key=lambda task: (task.retry_at, task.id)))
