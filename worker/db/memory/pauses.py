"""``worker.db.pauses`` on the in-memory store."""

import collections.abc as abc
import datetime

from oslo_db import exception as db_exc

from worker.db.memory import base
from worker.db import pauses

Session = base.InMemorySession
Moment = datetime.datetime


class InMemoryPauses(base.Repository):
    """``worker.db.pauses`` on the in-memory store."""

    @base.reads
    def any_paused(self, session: Session) -> bool:
        """Whether anything is paused."""
        return bool(self._store.pauses)

    @base.reads
    def matching(self, session: Session,
                 order_ids: abc.Collection[str]) -> list[pauses.Pause]:
        """Every pause but those of orders, and those of these orders."""
        wanted = set(order_ids)
        return [pause for _, pause in sorted(self._store.pauses.items())
                if pause.target != 'order' or pause.name in wanted]

    @base.reads
    def listed(self, session: Session, target: str | None = None,
               names: abc.Collection[str] | None = None
               ) -> list[pauses.Pause]:
        """The pauses, oldest first, of ``target`` and ``names``."""
        wanted = None if names is None else set(names)
        return [pause for _, pause in sorted(self._store.pauses.items())
                if target in (None, pause.target) and
                (wanted is None or pause.name in wanted)]

    @base.writes
    def add_many(self, session: Session, target: str,
                 names: abc.Collection[str], reason: str | None,
                 now: Moment,
                 project_ids: abc.Mapping[str, str | None] | None = None
                 ) -> list[str]:
        """Pause those of ``names`` not paused yet; returns them."""
        present = {pause.name for pause in self.listed(session, target,
                                                       names)}
        new = sorted(set(names) - present)
        for name in new:
            if len(name) > 255:
                raise db_exc.DBError('pauses.name is too long')
            pause_id = next(self._store.pause_ids)
            self._store.pauses[pause_id] = pauses.Pause(
                pause_id, target, name, reason,
                (project_ids or {}).get(name), now)
        return new

    @base.writes
    def remove_many(self, session: Session, target: str,
                    names: abc.Collection[str]) -> list[pauses.Pause]:
        """Lift the pauses of ``names`` of ``target``; returns them."""
        found = self.listed(session, target, names)
        for pause in found:
            del self._store.pauses[pause.id]
        return found

    @base.reads
    def census(self, session: Session,
               before: Moment) -> dict[str, tuple[int, int]]:
        """``{target: (paused, paused before before)}``."""
        found: dict[str, tuple[int, int]] = {}
        for pause in self._store.pauses.values():
            count, older = found.get(pause.target, (0, 0))
            found[pause.target] = (count + 1,
                                   older + (pause.created_at < before))
        return found
