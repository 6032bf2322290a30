"""Repository of the purge: finished orders last changed before a moment,
and every row of theirs, a batch at a time (``db purge``, ``[database]
retention_days``). SQL: Core SELECTs and DELETEs; every function takes
the session first, and the caller owns the transaction (one per batch).

A batch is chosen by ``select_batch`` through ``ix_orders_status_updated_at``
(one range of the index per status, oldest first), then deleted by
``delete`` in one transaction, which:

1. locks the rows of the orders of the batch that are still finished and
   still old (``SELECT … FOR UPDATE``, by id): an order resumed since it
   was chosen (moved back to PENDING) is left out, and a resume that
   comes after waits for the purge's COMMIT, then finds no order;
2. deletes the rows of those orders in every child table, explicitly (the
   foreign keys' ON DELETE CASCADE is not relied on);
3. deletes the orders, again only those still finished and old.

Child rows are deleted only for the orders locked in step 1, under that
lock: a concurrent resume of an ERROR order cannot lose its steps. On a
Galera cluster, where ``FOR UPDATE`` locks on one node only, step 3's
DELETE and the resume's UPDATE write the same row: one of the two is
refused at COMMIT (a deadlock, which ``retry_lost_race`` runs again),
and the run again reads the order as the other left it.

The orders are locked before their children, as every writer of an order
locks it (``orders.lock_live``, ``notifications.lock_orders``) before its
steps, so that a purge and a worker wait for each other rather than
deadlock. PENDING and CANCELLING orders are never purged.
"""

import collections.abc as abc
import datetime
import typing

import sqlalchemy as sa
from sqlalchemy import orm

from worker.db import models
from worker.db import rows
from worker.db import statements

Moment = datetime.datetime

_ORDERS = statements.ORDERS
#: The tables that hold rows of an order, each by its ``order_id``, in
#: the order the purge deletes them (and ``rows.PurgeCounts`` counts).
_CHILDREN = tuple(typing.cast(sa.Table, model.__table__) for model in (
    models.OrderStep, models.OrderRetryTask, models.NotificationEvent,
    models.OrderStepRun, models.OrderSignal))
Counts = rows.PurgeCounts
check_statuses = models.check_purgeable


def _finished_before(statuses: abc.Collection[str],
                     before: Moment) -> sa.ColumnElement[bool]:
    return sa.and_(_ORDERS.c.status.in_(list(statuses)),
                   _ORDERS.c.updated_at < before)


def select_batch(session: orm.Session, statuses: abc.Collection[str],
                 before: Moment, limit: int) -> list[str]:
    """The ids of up to ``limit`` orders in ``statuses`` last changed
    before ``before``, oldest first within each status.

    One range of ``ix_orders_status_updated_at`` per status, read only as
    far as the batch needs: the cost grows with the batch, not the table.
    """
    ids: list[str] = []
    for status in check_statuses(statuses):
        if len(ids) >= limit:
            break
        ids.extend(session.execute(
            sa.select(_ORDERS.c.id)
            .where(_ORDERS.c.status == status,
                   _ORDERS.c.updated_at < before)
            .order_by(_ORDERS.c.updated_at)
            .limit(limit - len(ids))).scalars())
    return ids


def delete(session: orm.Session, order_ids: abc.Collection[str],
           statuses: abc.Collection[str], before: Moment) -> Counts:
    """Delete those of ``order_ids`` still in ``statuses`` and last
    changed before ``before``, with their rows in every table.

    The others (resumed, or changed since they were chosen) keep every
    row. Returns what was deleted, per table.
    """
    statuses = check_statuses(statuses)
    if not order_ids:
        return Counts()
    locked = list(session.execute(
        sa.select(_ORDERS.c.id)
        .where(_ORDERS.c.id.in_(list(order_ids)),
               _finished_before(statuses, before))
        # One lock order for every purge, so that two purges of one
        # batch wait for each other rather than deadlock.
        .order_by(_ORDERS.c.id)
        .with_for_update()).scalars())
    if not locked:
        return Counts()
    children = [statements.execute(
        session, sa.delete(table).where(table.c.order_id.in_(locked))
    ).rowcount for table in _CHILDREN]
    deleted = statements.execute(session, sa.delete(_ORDERS).where(
        _ORDERS.c.id.in_(locked),
        _finished_before(statuses, before))).rowcount
    return Counts(deleted, *children)


def count(session: orm.Session, statuses: abc.Collection[str],
          before: Moment) -> Counts:
    """What a purge of ``statuses`` before ``before`` would delete now,
    per table (``db purge --dry-run``); deletes nothing."""
    chosen = (sa.select(_ORDERS.c.id)
              .where(_finished_before(check_statuses(statuses), before)))
    orders = session.execute(sa.select(sa.func.count()).select_from(
        chosen.subquery())).scalar_one()
    children = [session.execute(
        sa.select(sa.func.count()).select_from(table)
        .where(table.c.order_id.in_(chosen))).scalar_one()
        for table in _CHILDREN]
    return Counts(orders, *children)
