"""Repository of orders. Every function takes the session first.

Writes made on behalf of a dispatch are conditional on the order's
``generation`` (its fencing token): they return False, and change nothing,
when the order has moved on since the dispatch was made.
"""

import uuid

import sqlalchemy as sa

from worker.db import models


def create(session, order_type, meta, now):
    """Insert a PENDING order whose first step is ``process_type_order``.

    The order counts as dispatched at ``now``: the caller casts its first
    step after the commit, and the retry scheduler dispatches it again if
    no worker has taken it up within ``[scheduler]
    dispatch_deadline_seconds`` (a failed or lost cast).
    """
    order = models.Order(
        id=str(uuid.uuid4()), type=order_type, status=models.PENDING,
        meta=dict(meta or {}), generation=0, step='process_type_order',
        attempt=0, dispatched_at=now, created_at=now, updated_at=now)
    session.add(order)
    session.flush()
    return order


def get(session, order_id):
    """Return the order with this id, or None."""
    return session.get(models.Order, order_id)


def get_many(session, order_ids):
    """Return ``{id: order}`` of those of ``order_ids`` that exist."""
    if not order_ids:
        return {}
    return {order.id: order for order in session.scalars(
        sa.select(models.Order).where(models.Order.id.in_(list(order_ids))))}


def list_orders(session, status=None, limit=None):
    """Return orders, oldest first, optionally only those with ``status``."""
    query = sa.select(models.Order).order_by(
        models.Order.created_at, models.Order.id)
    if status:
        query = query.where(models.Order.status == status)
    if limit:
        query = query.limit(limit)
    return list(session.scalars(query))


def count_by_status(session):
    """Return ``{status: count}`` over every order."""
    query = sa.select(models.Order.status, sa.func.count()).group_by(
        models.Order.status)
    return {status: count for status, count in session.execute(query)}


def _fenced_update(session, order_id, token, now, **values):
    """Update a PENDING order only if its generation is still ``token``."""
    result = session.execute(
        sa.update(models.Order)
        .where(models.Order.id == order_id,
               models.Order.generation == token,
               models.Order.status == models.PENDING)
        .values(updated_at=now, **values)
        .execution_options(synchronize_session=False))
    return result.rowcount == 1


def claim(session, order_id, generation, now, owner):
    """Take the order for one step by moving its generation forward.

    Succeeds for exactly one of any number of concurrent callers holding
    the same token; the winner's new token is ``generation + 1`` and the
    order records ``owner`` until the step's result is written.
    """
    return _fenced_update(session, order_id, generation, now,
                          generation=generation + 1, owner=owner,
                          claimed_at=now, dispatched_at=None)


# A step's result releases the order: no owner, not in flight.
_RELEASED = {'owner': None, 'claimed_at': None, 'dispatched_at': None}


def schedule_step(session, order_id, generation, now, step, attempt):
    """Record the step the order waits for and its consecutive attempts."""
    return _fenced_update(session, order_id, generation, now,
                          step=step, attempt=attempt, **_RELEASED)


def complete(session, order_id, generation, now, meta):
    """Move the order to ACTIVE, merging ``meta`` into its metadata."""
    order = get(session, order_id)
    merged = dict(order.meta or {}, **(meta or {})) if order else meta
    return _fenced_update(session, order_id, generation, now,
                          status=models.ACTIVE, step=None, meta=merged,
                          **_RELEASED)


def fail(session, order_id, generation, now, reason):
    """Move the order to ERROR with ``reason``."""
    return _fenced_update(session, order_id, generation, now,
                          status=models.ERROR, step=None,
                          error_reason=reason, **_RELEASED)


def mark_dispatched(session, order_ids, now):
    """Record that the steps of these orders were cast at ``now``.

    Orders already claimed by a worker (it was quicker than this write)
    are left alone.
    """
    if not order_ids:
        return
    session.execute(
        sa.update(models.Order)
        .where(models.Order.id.in_(list(order_ids)),
               models.Order.owner.is_(None),
               models.Order.status == models.PENDING)
        .values(dispatched_at=now)
        .execution_options(synchronize_session=False))


def _without_retry_row():
    return ~sa.exists().where(
        models.OrderRetryTask.order_id == models.Order.id)


def _recovery_columns():
    return sa.select(models.Order.id, models.Order.generation,
                     models.Order.step, models.Order.attempt,
                     models.Order.owner)


def lost_dispatches(session, dispatched_before, limit):
    """Orders cast before ``dispatched_before`` that no worker took up.

    Reads ``ix_orders_dispatched_at``: only orders in flight are visited.
    Only an unclaimed PENDING order has a ``dispatched_at`` (a claim and
    every result clear it), so neither the status nor the owner is in the
    query: either would make SQLite read that index instead, every PENDING
    or unowned order. Rows with an owner are dropped here all the same,
    and ``take_back`` checks the status.
    """
    rows = session.execute(
        _recovery_columns()
        .where(models.Order.dispatched_at < dispatched_before,
               _without_retry_row())
        .order_by(models.Order.dispatched_at)
        .limit(limit))
    return [row for row in rows if row.owner is None]


def owners(session):
    """Return the distinct owners of claimed orders (``ix_orders_owner``)."""
    return set(session.scalars(
        sa.select(models.Order.owner).distinct()
        .where(models.Order.owner.is_not(None))))


def owned_by(session, dead_owners, limit):
    """Orders claimed by one of ``dead_owners`` (``ix_orders_owner``).

    Only PENDING orders have an owner (every result clears it); the status
    is left out of the query for the reason given in ``lost_dispatches``,
    and ``take_back`` checks it.
    """
    if not dead_owners:
        return []
    return list(session.execute(
        _recovery_columns()
        .where(models.Order.owner.in_(list(dead_owners)),
               _without_retry_row())
        .limit(limit)))


def take_back(session, order_id, generation, now):
    """Take a lost order back for re-dispatch: bump its token, no owner.

    The old token is now stale, so a late message or a zombie owner that
    still holds it has no effect. Returns False if the order moved on.
    """
    return _fenced_update(session, order_id, generation, now,
                          generation=generation + 1, **_RELEASED)


def cancel(session, order_id, now, reason):
    """Move a PENDING order to ERROR whatever its token (operator action).

    The generation moves forward too, so a step still running elsewhere
    finds its token stale and its result has no effect. Returns False if
    the order is not PENDING (or does not exist).
    """
    result = session.execute(
        sa.update(models.Order)
        .where(models.Order.id == order_id,
               models.Order.status == models.PENDING)
        .values(generation=models.Order.generation + 1,
                status=models.ERROR, error_reason=reason, step=None,
                updated_at=now, **_RELEASED)
        .execution_options(synchronize_session=False))
    return result.rowcount == 1
