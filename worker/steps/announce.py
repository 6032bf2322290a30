"""The announcements on the bus (``worker.notifications.bus``) of the orders a
committed batch of results ended: derived from the writes that were
committed, so that a result found superseded announces nothing."""

from worker.db import models
from worker.notifications import bus
from worker.steps import writes


def announce_writes(announcer, items, decided, moment):
    """Queue the announcement of each order that a committed batch moved
    to ACTIVE, ERROR or CANCELLED.

    :param announcer: a ``bus.Announcer``, or None (nothing to do).
    :param items: the batch's ``[(run, result)]``.
    :param decided: each item's ``runs.Decision`` as written, or None.
    :param moment: when the batch committed (naive UTC).
    """
    if announcer is None:
        return
    for (run, _), decision in zip(items, decided):
        for write in decision.writes if decision is not None else ():
            status, reason = terminal_move(write)
            if status is not None:
                announcer.order(bus.OF_STATUS[status], run.order_id,
                                run.project_id, status, moment,
                                reason=reason, request=run.request)


def terminal_move(write):
    """``(status, reason)`` of a write that ends an order, else
    ``(None, None)``."""
    if isinstance(write, writes.CompleteOrder):
        return models.ACTIVE, None
    if isinstance(write, writes.FailOrder):
        return models.ERROR, write.reason
    if isinstance(write, writes.EndCancel):
        return models.CANCELLED, write.failure
    return None, None
