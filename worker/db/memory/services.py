"""``worker.db.services`` on the in-memory store."""

import copy
import datetime

from oslo_utils import timeutils

from worker.db.memory import base
from worker.db import rows

Session = base.InMemorySession
Moment = datetime.datetime


class InMemoryServices(base.Repository):
    """``worker.db.services`` on the in-memory store."""

    @base.writes
    def heartbeat(self, session: Session, name: str, kind: str, host: str,
                  pid: int, now: Moment,
                  clock_offset: float | None = None,
                  topic: str | None = None) -> None:
        """Record that ``name`` is alive at ``now`` (insert if missing)."""
        service = self._store.services.get(name)
        self._store.services[name] = (
            base.replace(service, heartbeat_at=now,
                         clock_offset=clock_offset) if service else
            base.ServiceRecord(name=name, kind=kind, host=host, pid=pid,
                               started_at=now, heartbeat_at=now,
                               last_pass_at=None, next_pass_at=None,
                               clock_offset=clock_offset, topic=topic))

    @base.reads
    def database_time(self, session: Session) -> Moment:
        """The store's clock: this host's UTC time."""
        now: Moment = timeutils.utcnow()
        return now

    @base.writes
    def record_pass(self, session: Session, name: str, last_pass_at: Moment,
                    next_pass_at: Moment | None) -> None:
        """Record when a retry daemon passed and will pass next."""
        service = self._store.services.get(name)
        if service is not None:
            self._store.services[name] = base.replace(
                service, last_pass_at=last_pass_at,
                next_pass_at=next_pass_at)

    @base.writes
    def remove(self, session: Session, name: str) -> None:
        """Delete the row of ``name``."""
        self._store.services.pop(name, None)

    @base.reads
    def live_names(self, session: Session, alive_since: Moment,
                   kind: str | None = None) -> set[str]:
        """Names (of ``kind``) whose heartbeat is not before it."""
        return {service.name for service in self._store.services.values()
                if service.heartbeat_at >= alive_since and
                (not kind or service.kind == kind)}

    @base.reads
    def any_dead(self, session: Session, alive_since: Moment) -> bool:
        """Return True if a heartbeat is before ``alive_since``."""
        return any(service.heartbeat_at < alive_since
                   for service in self._store.services.values())

    @base.writes
    def delete_dead(self, session: Session,
                    alive_since: Moment) -> list[str]:
        """Delete rows with a heartbeat before it; returns their names."""
        names = sorted(name for name, service in self._store.services.items()
                       if service.heartbeat_at < alive_since)
        for name in names:
            del self._store.services[name]
        return names

    @base.reads
    def list_services(self, session: Session,
                      kind: str | None = None) -> list[rows.Service]:
        """Return the service rows (of ``kind``), by kind then name."""
        return copy.deepcopy(sorted(
            (service for service in self._store.services.values()
             if not kind or service.kind == kind),
            key=lambda service: (service.kind, service.name)))
