"""Repository of orders. Every function takes the session first.

Writes made on behalf of a dispatch are conditional on the order's
``generation`` (its fencing token): they return False, and change nothing,
when the order has moved on since the dispatch was made.
"""

import uuid

import sqlalchemy as sa

from worker.db import models


def create(session, order_type, meta, now):
    """Insert a PENDING order whose first step is ``process_type_order``."""
    order = models.Order(
        id=str(uuid.uuid4()), type=order_type, status=models.PENDING,
        meta=dict(meta or {}), generation=0, step='process_type_order',
        attempt=0, created_at=now, updated_at=now)
    session.add(order)
    session.flush()
    return order


def get(session, order_id):
    """Return the order with this id, or None."""
    return session.get(models.Order, order_id)


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


def claim(session, order_id, generation, now):
    """Take the order for one step by moving its generation forward.

    Succeeds for exactly one of any number of concurrent callers holding
    the same token; the winner's new token is ``generation + 1``.
    """
    return _fenced_update(session, order_id, generation, now,
                          generation=generation + 1)


def schedule_step(session, order_id, generation, now, step, attempt):
    """Record the step the order waits for and its consecutive attempts."""
    return _fenced_update(session, order_id, generation, now,
                          step=step, attempt=attempt)


def complete(session, order_id, generation, now, meta):
    """Move the order to ACTIVE, merging ``meta`` into its metadata."""
    order = get(session, order_id)
    merged = dict(order.meta or {}, **(meta or {})) if order else meta
    return _fenced_update(session, order_id, generation, now,
                          status=models.ACTIVE, step=None, meta=merged)


def fail(session, order_id, generation, now, reason):
    """Move the order to ERROR with ``reason``."""
    return _fenced_update(session, order_id, generation, now,
                          status=models.ERROR, step=None,
                          error_reason=reason)
