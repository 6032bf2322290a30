"""``worker.db.steps`` on the in-memory store."""

import collections.abc as abc
import copy
import datetime
import typing

from worker.db.memory import base
from worker.db.memory import recovery
from worker.db import models
from worker.db import rows
from worker.db import steps

Any = typing.Any
Session = base.InMemorySession
Moment = datetime.datetime


class InMemorySteps(recovery.StepRecovery):
    """``worker.db.steps`` on the in-memory store; the recovery's reads
    are ``recovery.StepRecovery``'s."""

    @base.writes
    def create(self, session: Session, order_id: str,
               names: abc.Iterable[str], roots: abc.Container[str],
               now: Moment, dispatched: bool = True) -> None:
        """Insert the steps ``names``; the ``roots`` PENDING, dispatched
        unless ``dispatched`` is False."""
        base.insert_steps(self._store, order_id, names, roots, now,
                          dispatched)

    @base.reads
    def for_order(self, session: Session,
                  order_id: str) -> dict[str, rows.Step]:
        """Return ``{name: step}`` of one order (``{}`` if it has none)."""
        return {step.name: copy.deepcopy(step) for step in sorted(
            self._store.steps.values(), key=base.step_key)
            if step.order_id == order_id}

    def _fenced_update(self, order_id: str, step: str, token: int,
                       now: Moment, **values: Any) -> bool:
        row = self._store.steps.get((order_id, step))
        if (row is None or row.generation != token or
                row.status != models.STEP_PENDING):
            return False
        self._store.steps[order_id, step] = base.replace(
            row, updated_at=now, **values)
        return True

    def _claim(self, order_id: str, step: str, generation: int, now: Moment,
               owner: str, lease_until: Moment) -> bool:
        row = self._store.steps.get((order_id, step))
        return row is not None and self._fenced_update(
            order_id, step, generation, now, generation=generation + 1,
            owner=owner, claimed_at=now, lease_expires_at=lease_until,
            dispatched_at=None, attempt=row.attempt + 1,
            started_at=row.started_at or now)

    @base.writes
    def claim_many(self, session: Session,
                   claims: abc.Collection[steps.Claim], now: Moment,
                   owner: str) -> set[steps.Key]:
        """Claim several steps; the ``(order_id, step)`` claimed."""
        claimed = set()
        for order_id, step, generation, lease_until in claims:
            if self._claim(order_id, step, generation, now, owner,
                           lease_until):
                claimed.add((order_id, step))
        return claimed

    @base.writes
    def _retry(self, session: Session, order_id: str, step: str, token: int,
               now: Moment, failures: int, polls: int,
               last_error: str | None = None) -> bool:
        """Release the step for a later run (its retry row is the caller's).
        """
        return self._fenced_update(order_id, step, token, now,
                                   failures=failures, polls=polls,
                                   last_error=last_error, **base.ENDED)

    def retry_many(self, session: Session,
                   retries: abc.Iterable[steps.Retry], now: Moment) -> int:
        """Release several steps; how many were."""
        return sum(self._retry(session, order_id, step, token, now, failures,
                               polls, last_error)
                   for order_id, step, token, failures, polls, last_error
                   in retries)

    @base.writes
    def _finish(self, session: Session, order_id: str, step: str, token: int,
                now: Moment, status: str, output: rows.JSON | None = None,
                last_error: str | None = None) -> bool:
        """End the step DONE (with its ``output``) or FAILED."""
        values: dict[str, Any] = dict(
            status=status, finished_at=now,
            **(base.ENDED if status == models.STEP_DONE else base.RELEASED))
        if output is not None:
            values['output'] = base.to_json(output)
        if last_error is not None:
            values['last_error'] = last_error
        return self._fenced_update(order_id, step, token, now, **values)

    def finish_many(self, session: Session,
                    finishes: abc.Iterable[steps.Finish],
                    now: Moment) -> int:
        """End several steps; how many were."""
        return sum(self._finish(session, order_id, step, token, now, status,
                                output, last_error)
                   for order_id, step, token, status, output, last_error
                   in finishes)

    @base.writes
    def release_many(self, session: Session,
                     releases: abc.Iterable[steps.Release],
                     now: Moment) -> int:
        """Give back steps claimed and never run; how many were."""
        released = 0
        for order_id, step, token, attempt, started_at in releases:
            released += self._fenced_update(
                order_id, step, token, now,
                **dict(base.RELEASED, dispatched_at=now, attempt=attempt,
                       started_at=started_at))
        return released

    @base.writes
    def _start(self, session: Session, order_id: str,
               names: abc.Iterable[str] | None, now: Moment,
               dispatched: bool) -> None:
        """Make WAITING steps PENDING; ``dispatched``: cast at ``now``."""
        for step in names or ():
            row = self._store.steps.get((order_id, step))
            if row is not None and row.status == models.STEP_WAITING:
                self._store.steps[order_id, step] = base.replace(
                    row, status=models.STEP_PENDING, updated_at=now,
                    dispatched_at=now if dispatched else None)

    def start_many(self, session: Session,
                   starts: abc.Iterable[steps.Start], now: Moment) -> None:
        """Start the steps of several orders."""
        for order_id, names, dispatched in starts:
            self._start(session, order_id, names, now, dispatched)

    @base.writes
    def revoke_open(self, session: Session, order_id: str, now: Moment,
                    reason: str) -> list[str]:
        """Cancel every WAITING or PENDING step; returns their names."""
        open_steps = sorted(
            (step for step in self._store.steps.values()
             if step.order_id == order_id and step.status in base.OPEN and
             not models.is_delivery(step.name)),
            key=base.step_key)
        for step in open_steps:
            self._store.steps[base.step_key(step)] = base.replace(
                step, generation=step.generation + 1,
                status=models.STEP_CANCELLED, last_error=reason,
                finished_at=now, updated_at=now, **base.RELEASED)
        return [step.name for step in open_steps]

    @base.writes
    def _record_delivery(self, session: Session, order_id: str, step: str,
                         token: int, now: Moment, status: str,
                         delivered: int, failures: int,
                         last_error: str | None = None,
                         dispatched: bool = False) -> bool:
        """Write a delivery's run."""
        values: dict[str, Any] = dict(
            status=status, failures=failures, last_error=last_error,
            output={'delivered_sequence': delivered}, **base.RELEASED)
        if dispatched:
            values['dispatched_at'] = now
        if status == models.STEP_DONE:
            values['finished_at'] = now
        return self._fenced_update(order_id, step, token, now, **values)

    def record_delivery_many(self, session: Session,
                             deliveries: abc.Iterable[steps.Delivery],
                             now: Moment) -> int:
        """Write several deliveries' runs; how many were."""
        return sum(self._record_delivery(session, order_id, step, token, now,
                                         status, delivered, failures,
                                         last_error, dispatched)
                   for (order_id, step, token, status, delivered, failures,
                        last_error, dispatched) in deliveries)

    @base.writes
    def mark_dispatched(self, session: Session,
                        keys: abc.Collection[steps.Key],
                        now: Moment) -> None:
        """Record that unclaimed PENDING steps were cast at ``now``."""
        for order_id, step in keys or ():
            row = self._store.steps.get((order_id, step))
            if (row is not None and row.owner is None and
                    row.status == models.STEP_PENDING):
                self._store.steps[order_id, step] = base.replace(
                    row, dispatched_at=now)

    @base.writes
    def extend_lease(self, session: Session, order_id: str, step: str,
                     token: int, owner: str, now: Moment,
                     lease_until: Moment) -> bool:
        """Move a running step's lease, if the run still holds it."""
        row = self._store.steps.get((order_id, step))
        return row is not None and row.owner == owner and \
            self._fenced_update(order_id, step, token, now,
                                lease_expires_at=lease_until)

    @base.writes
    def take_back(self, session: Session, order_id: str, step: str,
                  generation: int, now: Moment,
                  failed: str | None = None, crashed: bool = False) -> bool:
        """Take a lost step back: bump its token, no owner."""
        row = self._store.steps.get((order_id, step))
        values: dict[str, Any] = dict(generation=generation + 1,
                                      **base.RELEASED)
        if failed and row is not None:
            values.update(failures=row.failures + 1, last_error=failed)
        if crashed and row is not None:
            values.update(crashes=row.crashes + 1)
        return self._fenced_update(order_id, step, generation, now,
                                   **values)
