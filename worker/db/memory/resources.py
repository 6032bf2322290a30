"""``worker.db.resources`` on the in-memory store."""

import collections
import collections.abc as abc
import datetime

from worker.db.memory import base
from worker.db import models
from worker.db import resources
from worker.db import retry_tasks

Session = base.InMemorySession
Moment = datetime.datetime


class InMemoryResources(base.Repository):
    """``worker.db.resources`` on the in-memory store."""

    @base.reads
    def held(self, session: Session,
             keys: abc.Collection[str]) -> dict[str, set[int]]:
        """``{key: {slot, ...}}``: the slots of these keys held now."""
        found: dict[str, set[int]] = {key: set() for key in keys}
        for key, slot in self._store.slots:
            if key in found:
                found[key].add(slot)
        return found

    @base.writes
    def take(self, session: Session, key: str, slot: int,
             holder: resources.Holder, now: Moment) -> bool:
        """Take a slot for a run; False if another run holds it."""
        if holder[0] not in self._store.orders:
            raise base.missing_order('resource_slots')
        if (key, slot) in self._store.slots:
            return False
        order_id, step, generation = holder
        self._store.slots[key, slot] = (order_id, step, generation)
        return True

    @base.writes
    def give_back(self, session: Session,
                  slots: abc.Collection[resources.Slot]) -> None:
        """Delete slots taken in this transaction."""
        for key, slot in slots:
            self._store.slots.pop((key, slot), None)

    def _delete(self, doomed: abc.Iterable[resources.Slot]
                ) -> dict[str, int]:
        freed: collections.Counter[str] = collections.Counter()
        for key, slot in list(doomed):
            del self._store.slots[key, slot]
            freed[key] += 1
        return dict(freed)

    @base.writes
    def release(self, session: Session, holders: abc.Collection[
            resources.Holder]) -> dict[str, int]:
        """Free the slots of these runs; ``{key: freed}``."""
        wanted = {tuple(holder) for holder in holders}
        return self._delete(slot for slot, holder in
                            self._store.slots.items() if holder in wanted)

    def _orphaned(self, holder: resources.Holder) -> bool:
        step = self._store.steps.get((holder[0], holder[1]))
        return step is None or not (
            step.generation == holder[2] and
            step.status == models.STEP_PENDING and step.owner is not None)

    @base.reads
    def orphans(self, session: Session,
                limit: int) -> list[resources.Slot]:
        """Slots whose holder no longer runs."""
        return sorted(slot for slot, holder in self._store.slots.items()
                      if self._orphaned(holder))[:limit]

    @base.writes
    def sweep(self, session: Session, limit: int) -> dict[str, int]:
        """Free slots whose holder no longer runs; ``{key: freed}``."""
        return self._delete(self.orphans(session, limit))

    @base.writes
    def undispatch(self, session: Session,
                   steps: abc.Collection[resources.Holder],
                   now: Moment) -> int:
        """Mark unowned PENDING steps not in flight; how many."""
        changed = 0
        for order_id, name, generation in steps:
            step = self._store.steps.get((order_id, name))
            if step is not None and step.generation == generation and \
                    step.status == models.STEP_PENDING and \
                    step.owner is None:
                self._store.steps[order_id, name] = base.replace(
                    step, dispatched_at=None, updated_at=now)
                changed += 1
        return changed

    @base.reads
    def waiting(self, session: Session, key: str,
                limit: int) -> list[retry_tasks.DueTask]:
        """The oldest retry rows waiting for a slot of ``key``, with
        their orders' types."""
        return [retry_tasks.DueTask(
            task.id, task.order_id, task.retry_task, task.retry_at,
            task.retry_args, task.retry_kwargs, task.retry_count,
            task.priority, True, self._store.orders[task.order_id].type)
            for task in sorted(self._store.tasks.values(),
                               key=lambda task: task.id)
            if task.waiting_for == key and not task.parked][:limit]

    @base.writes
    def make_due(self, session: Session, freed: abc.Mapping[str, int],
                 now: Moment) -> int:
        """Make the oldest rows waiting for the keys freed due now."""
        made = 0
        for key, count in sorted(freed.items()):
            for row in self.waiting(session, key, count):
                self._store.tasks[row.id] = base.replace(
                    self._store.tasks[row.id], retry_at=now,
                    waiting_for=None)
                made += 1
        return made

    @base.reads
    def starts(self, session: Session, key: str) -> dict[int, Moment]:
        """``{slot: started_at}`` of a key's start rows."""
        return {slot: at for (of, slot), at in self._store.starts.items()
                if of == key}

    @base.writes
    def add_starts(self, session: Session, key: str,
                   slots: abc.Collection[int]) -> None:
        """Make start rows of a key, last used long ago."""
        for slot in slots:
            self._store.starts.setdefault((key, slot), resources.NEVER)

    @base.writes
    def take_start(self, session: Session, key: str, slot: int,
                   now: Moment, free_before: Moment) -> bool:
        """Use a start row last used at or before ``free_before``."""
        last = self._store.starts.get((key, slot))
        if last is None or last > free_before:
            return False
        self._store.starts[key, slot] = now
        return True

    @base.writes
    def give_back_start(self, session: Session, key: str, slot: int,
                        now: Moment, started_at: Moment) -> None:
        """Undo ``take_start`` of this transaction."""
        if self._store.starts.get((key, slot)) == now:
            self._store.starts[key, slot] = started_at
