"""Repository of the signals sent to orders (``order_signals``). SQL:
Core; every function takes the session first, and the caller owns the
transaction.

The worker's part of the contract (``interfaces.Signals``): a claim reads
the unconsumed signals its steps declare (``unconsumed_many``), the run
that completes a step consumes those it saw (``consume``), and a run that
polls wakes its step at once if one came while it ran (``wake``). The
front door's part (``queries.SignalQueries``): ``add`` and ``find`` under
the order's lock, ``hold_steps``, and ``for_order`` for the history.

Why a signal is never lost between a run and its sender: the sender
holds the rows of the steps that declare it (``hold_steps``, ``FOR
UPDATE``) before it wakes them, and a run's result updates its step's row
before its ``wake``. Whichever of the two comes second waits for the
other's COMMIT and then, at READ COMMITTED (``worker.db.session``), sees
what it wrote: the sender sees the step's new retry row and moves it, or
the run's ``wake`` sees the signal and moves its own.
"""

import collections.abc as abc
import datetime
import typing

import sqlalchemy as sa
from sqlalchemy import orm

from worker.db import models
from worker.db import rows
from worker.db import statements

Any = typing.Any
Moment = datetime.datetime

_TABLE = typing.cast(sa.Table, models.OrderSignal.__table__)
_TASKS = statements.RETRY_TASKS
_STEPS = statements.STEPS


def unconsumed_many(session: orm.Session, order_ids: abc.Collection[str],
                    names: abc.Collection[str]
                    ) -> dict[str, list[rows.OrderSignal]]:
    """``{order_id: [signal, ...]}``: the signals named one of ``names``
    sent to those orders and not consumed, oldest first; one query (a
    range of the ``(order_id, signal_id)`` key per order)."""
    found: dict[str, list[rows.OrderSignal]] = {}
    if not order_ids or not names:
        return found
    for row in session.execute(
            sa.select(_TABLE)
            .where(_TABLE.c.order_id.in_(list(order_ids)),
                   _TABLE.c.name.in_(list(names)),
                   _TABLE.c.consumed_at.is_(None))
            .order_by(_TABLE.c.id)):
        found.setdefault(row.order_id, []).append(row)
    return found


def consume(session: orm.Session, order_id: str, step: str,
            ids: abc.Collection[int], now: Moment) -> int:
    """Mark the signals ``ids`` of the order consumed by ``step``; those
    not consumed yet. Returns how many."""
    if not ids:
        return 0
    return statements.changed(session, sa.update(_TABLE).where(
        _TABLE.c.order_id == order_id, _TABLE.c.id.in_(list(ids)),
        _TABLE.c.consumed_at.is_(None)).values(
            consumed_at=now, consumed_by=step))


def wake(session: orm.Session, order_id: str, step: str,
         names: abc.Collection[str], after_id: int, now: Moment) -> bool:
    """Move the step's retry row due at ``now`` if a signal named one of
    ``names``, with an id above ``after_id``, waits unconsumed; True if
    it did.

    Only a row that waits for its time: not one parked, nor one waiting
    for a resource slot (``waiting_for``), which its slot wakes.
    """
    if not names:
        return False
    sent = sa.exists().where(
        _TABLE.c.order_id == order_id, _TABLE.c.name.in_(list(names)),
        _TABLE.c.consumed_at.is_(None), _TABLE.c.id > after_id)
    return statements.changed(session, sa.update(_TASKS).where(
        _TASKS.c.order_id == order_id, _TASKS.c.retry_task == step,
        _TASKS.c.parked.is_(False), _TASKS.c.waiting_for.is_(None),
        _TASKS.c.retry_at > now, sent).values(
            retry_at=now)) > 0


def find(session: orm.Session, order_id: str,
         signal_id: str) -> rows.OrderSignal | None:
    """The order's signal sent with ``signal_id``, or None."""
    return session.execute(sa.select(_TABLE).where(
        _TABLE.c.order_id == order_id,
        _TABLE.c.signal_id == signal_id)).first()


def add(session: orm.Session, order_id: str, signal_id: str, name: str,
        payload: Any, now: Moment) -> rows.OrderSignal:
    """Insert a signal; the row written.

    :raises oslo_db.exception.DBDuplicateEntry: the order has a signal
        with this ``signal_id`` (``find`` it).
    """
    statements.execute(session, sa.insert(_TABLE).values(
        order_id=order_id, signal_id=signal_id, name=name, payload=payload,
        created_at=now))
    return typing.cast(rows.OrderSignal, find(session, order_id, signal_id))


def hold_steps(session: orm.Session, order_id: str,
               names: abc.Collection[str]) -> list[rows.Step]:
    """The rows of these steps of the order, held (``FOR UPDATE``) until
    the transaction ends: a run's result waits for them, or they for it.
    """
    if not names:
        return []
    return list(session.execute(
        sa.select(_STEPS)
        .where(_STEPS.c.order_id == order_id,
               _STEPS.c.name.in_(sorted(names)))
        .order_by(_STEPS.c.name)
        .with_for_update()))


def for_order(session: orm.Session,
              order_id: str) -> list[rows.OrderSignal]:
    """Every signal of the order, in the order they were sent."""
    return list(session.execute(
        sa.select(_TABLE).where(_TABLE.c.order_id == order_id)
        .order_by(_TABLE.c.id)))
