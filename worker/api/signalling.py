"""The transaction of the front door that sends a signal to an order,
as ``worker.api.commands`` writes the others: it returns the steps the
signal woke, to cast, and neither casts nor announces.
"""

import dataclasses
import typing

from worker.db import models
from worker.db import session as db_session
from worker import values


@dataclasses.dataclass(frozen=True)
class Signalled:
    """What sending one signal did."""

    #: The signal's row: the one written, or the first of its id.
    signal: typing.Any
    #: The signal id had been sent already: nothing was written.
    repeated: bool
    #: The steps it woke (they waited for it), to cast.
    to_cast: tuple[values.StepRef, ...] = ()


def signal(database, workflow, order_id, name, signal_id, payload, now,
           request=None):
    """Send the signal ``name`` to a PENDING order; wake the steps that
    wait for it.

    :returns: a ``Signalled``; or None if the order is not PENDING and
        never had a signal ``signal_id``.
    """
    try:
        return _signal_in_a_transaction(database, workflow, order_id, name,
                                        signal_id, payload, now, request)
    except _NotPending:
        return None


class _NotPending(Exception):
    """Raised in ``signal``'s transaction to roll back its lock of an
    order that is not PENDING (a CANCELLING one)."""


@db_session.retry_lost_race
def _signal_in_a_transaction(database, workflow, order_id, name, signal_id,
                             payload, now, request):
    """``signal``'s transaction, under the order's lock: the first signal
    of the id, or the new one and the steps it woke. Run again whole when
    it lost a race (a deadlock with a step's result)."""
    repositories, queries = database.repositories, database.queries
    with database.session() as session, session.begin():
        # The lock first, so that a repeat sent at the same moment finds
        # this one's row, and one order's signals are numbered in order.
        live = repositories.orders.lock_live(session, order_id, now)
        first = queries.signals.find(session, order_id, signal_id)
        if first is not None:
            return Signalled(first, repeated=True)
        if not live:
            return None
        if repositories.orders.get(session, order_id).status != \
                models.PENDING:
            raise _NotPending(order_id)
        row = queries.signals.add(session, order_id, signal_id, name,
                                  payload, now)
        woken = []
        # Held, so that a run of one of them that polls writes its result
        # before (and this finds its retry row) or after (and it finds
        # this signal: worker.db.signals).
        for step in queries.signals.hold_steps(
                session, order_id, workflow.waiting_for(name)):
            if step.status == models.STEP_PENDING and step.owner is None \
                    and repositories.signals.wake(session, order_id,
                                                  step.name, (name,),
                                                  row.id - 1, now):
                woken.append(values.StepRef(step.name, order_id,
                                            step.generation, request,
                                            workflow.type_name))
    return Signalled(row, repeated=False, to_cast=tuple(woken))
