"""``worker.db.services`` on the in-memory store."""

import copy
import dataclasses

from oslo_utils import timeutils

from worker.db.memory import base


class InMemoryServices(base.Repository):
    """``worker.db.services`` on the in-memory store."""

    @base.writes
    def heartbeat(self, session, name, kind, host, pid, now,
                  clock_offset=None):
        """Record that ``name`` is alive at ``now`` (insert if missing)."""
        service = self._store.services.get(name)
        self._store.services[name] = (
            dataclasses.replace(service, heartbeat_at=now,
                                clock_offset=clock_offset) if service else
            base.ServiceRecord(name=name, kind=kind, host=host, pid=pid,
                               started_at=now, heartbeat_at=now,
                               last_pass_at=None, next_pass_at=None,
                               clock_offset=clock_offset))

    @base.reads
    def database_time(self, session):
        """The store's clock: this host's UTC time."""
        return timeutils.utcnow()

    @base.writes
    def record_pass(self, session, name, last_pass_at, next_pass_at):
        """Record when a retry daemon passed and will pass next."""
        service = self._store.services.get(name)
        if service is not None:
            self._store.services[name] = dataclasses.replace(
                service, last_pass_at=last_pass_at,
                next_pass_at=next_pass_at)

    @base.writes
    def remove(self, session, name):
        """Delete the row of ``name``."""
        self._store.services.pop(name, None)

    @base.reads
    def live_names(self, session, alive_since, kind=None):
        """Names (of ``kind``) whose heartbeat is not before it."""
        return {service.name for service in self._store.services.values()
                if service.heartbeat_at >= alive_since and
                (not kind or service.kind == kind)}

    @base.reads
    def any_dead(self, session, alive_since):
        """Return True if a heartbeat is before ``alive_since``."""
        return any(service.heartbeat_at < alive_since
                   for service in self._store.services.values())

    @base.writes
    def delete_dead(self, session, alive_since):
        """Delete rows with a heartbeat before it; returns their names."""
        names = sorted(name for name, service in self._store.services.items()
                       if service.heartbeat_at < alive_since)
        for name in names:
            del self._store.services[name]
        return names

    @base.reads
    def list_services(self, session, kind=None):
        """Return the service rows (of ``kind``), by kind then name."""
        return copy.deepcopy(sorted(
            (service for service in self._store.services.values()
             if not kind or service.kind == kind),
            key=lambda service: (service.kind, service.name)))
