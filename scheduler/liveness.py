"""Pure rules of liveness and lock staleness; time is a parameter.

The database queries apply these rules to many rows at once; the
functions here are the same rules for one value. ``Cutoffs`` applies them
once, at one moment: a pass and the operator commands read their
cut-offs from it rather than computing them where each is needed.
"""

import collections.abc
import dataclasses
import datetime
import typing

from oslo_config import cfg


def alive_since(now: datetime.datetime,
                service_down_time: float) -> datetime.datetime:
    """Heartbeats at or after this moment belong to live processes."""
    return now - datetime.timedelta(seconds=service_down_time)


def sees_long_enough(now: datetime.datetime,
                     failed_at: datetime.datetime | None,
                     service_down_time: float) -> bool:
    """True if a daemon whose last failed pass was at ``failed_at`` (None:
    none failed) may judge others by their heartbeats at ``now``.

    While the database was away (a restart, a Galera cluster without
    quorum) no process could heartbeat, the live ones no more than the
    dead: judged at once when it is back, every process whose heartbeat
    is older than ``service_down_time`` would look dead, and the steps it
    runs would be taken back and counted as crashes. A full
    ``service_down_time`` after the last failed pass, every live process
    has heartbeated again (``report_interval`` is at most a third of it).
    """
    return failed_at is None or \
        now - failed_at >= datetime.timedelta(seconds=service_down_time) or \
        now < failed_at  # the clock went back


def dead_owners(owners: collections.abc.Iterable[str],
                live_names: collections.abc.Iterable[str]) -> set[str]:
    """Owners of claimed orders that are not among the live services.

    A process never seen, or whose row was removed, is as dead as one
    whose heartbeat is old: only a fresh heartbeat keeps an order.
    """
    return set(owners) - set(live_names)


def lock_stale_before(now: datetime.datetime,
                      retry_lock_timeout_seconds: float) -> datetime.datetime:
    """A lock taken (or last renewed) before this moment is stale."""
    return now - datetime.timedelta(seconds=retry_lock_timeout_seconds)


def dispatch_lost_before(now: datetime.datetime,
                         dispatch_deadline_seconds: float
                         ) -> datetime.datetime:
    """A dispatch made before this moment and not taken up is lost."""
    return now - datetime.timedelta(seconds=dispatch_deadline_seconds)


def lease_lost_before(now: datetime.datetime,
                      lease_grace_seconds: float) -> datetime.datetime:
    """A lease that ended before this moment is lost.

    Not at its end: the run that holds it may be writing its result, and
    a step taken back at once would run beside it (a dual run).
    """
    return now - datetime.timedelta(seconds=lease_grace_seconds)


@dataclasses.dataclass(frozen=True)
class Cutoffs:
    """The moments one pass compares rows against, computed once.

    Every rule above, applied at the same ``now``: a pass (and an operator
    command) reads its cut-offs from one of these instead of computing
    them again where each is needed.
    """

    now: datetime.datetime
    #: Heartbeats at or after this belong to live processes.
    alive_since: datetime.datetime
    #: A lock taken (or last renewed) before this is stale by age.
    lock_stale_before: datetime.datetime
    #: A dispatch made before this and not taken up is lost.
    dispatch_lost_before: datetime.datetime
    #: A lease that ended before this is lost: its grace has passed.
    lease_lost_before: datetime.datetime

    def is_alive(self, heartbeat_at: datetime.datetime) -> bool:
        """True if a process that last beat at ``heartbeat_at`` is alive."""
        return heartbeat_at >= self.alive_since

    @classmethod
    def at(cls, now: datetime.datetime, conf: cfg.ConfigOpts) -> typing.Self:
        """The cut-offs as of ``now`` under ``conf``'s options."""
        group = conf.scheduler
        return cls(
            now=now,
            alive_since=alive_since(now, conf.service_down_time),
            lock_stale_before=lock_stale_before(
                now, group.retry_lock_timeout_seconds),
            dispatch_lost_before=dispatch_lost_before(
                now, group.dispatch_deadline_seconds),
            lease_lost_before=lease_lost_before(
                now, conf.worker.lease_grace_seconds))
