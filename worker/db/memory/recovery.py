"""The retry daemon's recovery reads of ``worker.db.steps`` on the
in-memory store: steps lost between a cast and a claim, or held by a dead
owner or an ended lease (``scheduler.recovery``).

Apart from ``steps``, so that no class of the fake passes the house's
250 lines; ``InMemorySteps`` inherits them.
"""

import collections.abc as abc
import datetime

from worker.db.memory import base
from worker.db import rows
from worker.db import steps

Session = base.InMemorySession
Moment = datetime.datetime


class StepRecovery(base.Repository):
    """The recovery's reads of the steps on the in-memory store."""

    def _without_retry_row(self) -> list[rows.Step]:
        waiting = {(task.order_id, task.retry_task)
                   for task in self._store.tasks.values()}
        return [step for step in self._store.steps.values()
                if base.step_key(step) not in waiting]

    @staticmethod
    def _recovery(step: rows.Step) -> steps.RecoveryRow:
        return steps.RecoveryRow(step.order_id, step.name, step.generation,
                                 step.failures, step.owner, step.crashes,
                                 step.claimed_at, step.attempt)

    @base.reads
    def lost_dispatches(self, session: Session, dispatched_before: Moment,
                        limit: int) -> list[steps.RecoveryRow]:
        """Steps cast before ``dispatched_before`` no worker took up."""
        found = sorted((step for step in self._without_retry_row()
                        if step.dispatched_at is not None and
                        step.dispatched_at < dispatched_before),
                       key=lambda step: (step.dispatched_at,
                                         base.step_key(step)))
        # As in SQL: the limit applies before claimed steps are dropped.
        return [self._recovery(step) for step in found[:limit]
                if step.owner is None]

    @base.reads
    def owners(self, session: Session) -> set[str]:
        """Return the distinct owners of claimed steps."""
        return {step.owner for step in self._store.steps.values()
                if step.owner is not None}

    @base.reads
    def owned_by(self, session: Session, dead_owners: abc.Collection[str],
                 limit: int) -> list[steps.RecoveryRow]:
        """Steps claimed by one of ``dead_owners``."""
        dead = set(dead_owners or ())
        found = sorted((step for step in self._without_retry_row()
                        if step.owner in dead), key=base.step_key)
        return [self._recovery(step) for step in found[:limit]]

    @base.reads
    def expired_leases(self, session: Session, ended_before: Moment,
                       limit: int) -> list[steps.RecoveryRow]:
        """Claimed steps whose lease ended before ``ended_before``."""
        found = sorted((step for step in self._store.steps.values()
                        if step.lease_expires_at is not None and
                        step.lease_expires_at < ended_before),
                       key=lambda step: (step.lease_expires_at,
                                         base.step_key(step)))
        return [self._recovery(step) for step in found[:limit]]
