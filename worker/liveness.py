"""Pure rules of liveness and lock staleness; time is a parameter.

The database queries apply these rules to many rows at once; the
functions here are the same rules for one value, for the scheduler's
decisions, the operator commands and the tests.
"""

import datetime


def alive_since(now, service_down_time):
    """Heartbeats at or after this moment belong to live processes."""
    return now - datetime.timedelta(seconds=service_down_time)


def is_alive(heartbeat_at, now, service_down_time):
    """True if a process that last beat at ``heartbeat_at`` is alive."""
    return heartbeat_at >= alive_since(now, service_down_time)


def dead_owners(owners, live_names):
    """Owners of claimed orders that are not among the live services.

    A process never seen, or whose row was removed, is as dead as one
    whose heartbeat is old: only a fresh heartbeat keeps an order.
    """
    return set(owners) - set(live_names)


def lock_stale_before(now, retry_lock_timeout_seconds):
    """A lock taken (or last renewed) before this moment is stale."""
    return now - datetime.timedelta(seconds=retry_lock_timeout_seconds)


def dispatch_lost_before(now, dispatch_deadline_seconds):
    """A dispatch made before this moment and not taken up is lost."""
    return now - datetime.timedelta(seconds=dispatch_deadline_seconds)
