"""Repository of the bulk actions' reads and writes of orders: the orders
a filter selects, a batch at a time, and the writes of a batch that
change many orders in a few statements (cancel, re-prioritize).

The selection is read by keyset over the primary key (``id > last``,
ordered by id, a batch at a time), not by ``(created_at, id)``: each
batch is one short read that starts where the last one ended, the orders
a batch changed no longer match (cancelled, resumed) or are behind the
keyset anyway, and the whole action reads the primary key once however
many batches it takes. The other filters (status, type, project,
creation range, metadata) are conditions on the rows read; on
PostgreSQL a metadata filter may instead be served by the GIN index
``ix_orders_meta_path_ops`` when the planner finds it more selective.
"""

import collections.abc as abc
import dataclasses
import datetime
import typing

import sqlalchemy as sa
from sqlalchemy import orm

from worker.db import meta_search
from worker.db import models
from worker.db import statements

Moment = datetime.datetime

_ORDERS = statements.ORDERS
_RETRY_TASKS = statements.RETRY_TASKS
_STEPS = statements.STEPS


@dataclasses.dataclass(frozen=True)
class Selection:
    """The orders a bulk action applies to: every condition given holds.

    ``since`` and ``until`` bound the creation time (``since`` included,
    ``until`` excluded), naive UTC.
    """

    statuses: tuple[str, ...]
    order_type: str | None = None
    project_id: str | None = None
    since: Moment | None = None
    until: Moment | None = None
    meta: tuple[meta_search.MetaFilter, ...] = ()


def _where(dialect: str,
           selection: Selection) -> list[sa.ColumnElement[bool]]:
    """The conditions of ``selection`` on the orders table, in the words
    of ``dialect``."""
    order = _ORDERS.c
    status: sa.ColumnElement[str] = order.status
    if dialect == 'sqlite':
        # ``status || ''`` keeps SQLite off the status indexes, whose
        # range it would read and sort by id for every batch: the keyset
        # walks the primary key instead. MariaDB's ``ix_orders_status``
        # holds the primary key, in id order, and PostgreSQL plans on
        # its statistics.
        status = order.status.concat('')
    conditions = [status.in_(selection.statuses)]
    if selection.order_type:
        conditions.append(order.type == selection.order_type)
    if selection.project_id is not None:
        conditions.append(order.project_id == selection.project_id)
    if selection.since is not None:
        conditions.append(order.created_at >= selection.since)
    if selection.until is not None:
        conditions.append(order.created_at < selection.until)
    if selection.meta:
        conditions.append(meta_search.clause(dialect, order.meta,
                                             selection.meta))
    return conditions


def batch_after(session: orm.Session, selection: Selection,
                after: str | None, limit: int) -> list[typing.Any]:
    """Up to ``limit`` orders of ``selection``, by id, after the id
    ``after`` (None: from the first): rows of their ``id``, ``type``,
    ``project_id``, ``request_id`` and ``global_request_id``, what a
    command and its announcement need."""
    return list(session.execute(batch_statement(
        session.get_bind().dialect.name, selection, after, limit)))


def batch_statement(dialect: str, selection: Selection, after: str | None,
                    limit: int) -> sa.Select[typing.Any]:
    """``batch_after``'s SELECT in the words of ``dialect``, for it and
    the plan benchmarks."""
    order = _ORDERS.c
    query = (sa.select(order.id, order.type, order.project_id,
                       order.request_id, order.global_request_id)
             .where(*_where(dialect, selection))
             .order_by(order.id).limit(limit))
    if after is not None:
        query = query.where(order.id > after)
    return query


def count(session: orm.Session, selection: Selection,
          limit: int | None = None) -> int:
    """How many orders ``selection`` holds, counting up to ``limit`` at
    most (None: all)."""
    query = sa.select(_ORDERS.c.id).where(
        *_where(session.get_bind().dialect.name, selection))
    if limit is not None:
        query = query.limit(limit)
    return session.scalar(
        sa.select(sa.func.count()).select_from(query.subquery())) or 0


def set_priority_many(session: orm.Session, order_ids: abc.Collection[str],
                      statuses: abc.Collection[str], priority: int,
                      now: Moment) -> list[str]:
    """Give the orders of ``order_ids`` still in one of ``statuses`` the
    priority ``priority``, and their retry rows too (the due query reads
    a row's own copy: ``models.OrderRetryTask.priority``); return the ids
    of those changed.

    The orders' rows are locked (by id) before their retry rows are
    written, as a cancel or a resume does.
    """
    models.check_priority(priority)
    changed = list(session.scalars(
        sa.select(_ORDERS.c.id)
        .where(_ORDERS.c.id.in_(list(order_ids)),
               _ORDERS.c.status.in_(list(statuses)),
               _ORDERS.c.priority != priority)
        .order_by(_ORDERS.c.id).with_for_update()))
    if not changed:
        return []
    session.execute(sa.update(_ORDERS).where(_ORDERS.c.id.in_(changed))
                    .values(priority=priority, updated_at=now))
    session.execute(sa.update(_RETRY_TASKS)
                    .where(_RETRY_TASKS.c.order_id.in_(changed))
                    .values(priority=priority))
    return changed


def cancel_many(session: orm.Session, order_ids: abc.Collection[str],
                now: Moment, reason: str,
                compensating: abc.Collection[str]) -> list[str]:
    """Cancel the orders of ``order_ids`` that are still PENDING, in a
    few statements whatever their number; return their ids.

    What ``orders.cancel``, ``steps.revoke_open`` and
    ``retry_tasks.delete_for_order`` do for one order, set-wise: the
    orders' rows are locked (by id), then moved to CANCELLING (those of
    ``compensating``, whose type has a compensation step) or CANCELLED
    with ``reason``; their WAITING and PENDING workflow steps are
    CANCELLED, released, and their generation moved forward, so that a
    run still going finds its token stale; their workflow's retry rows
    are deleted. Their deliveries (``notify:*``) and its retry rows go
    on: they notify the cancel.
    """
    order, step, task = _ORDERS.c, _STEPS.c, _RETRY_TASKS.c
    locked = list(session.scalars(
        sa.select(order.id).where(order.id.in_(list(order_ids)),
                                  order.status == models.PENDING)
        .order_by(order.id).with_for_update()))
    if not locked:
        return []
    for status, ids in (
            (models.CANCELLING, [i for i in locked if i in compensating]),
            (models.CANCELLED, [i for i in locked if i not in compensating])):
        if ids:
            session.execute(sa.update(_ORDERS).where(order.id.in_(ids))
                            .values(status=status, error_reason=reason,
                                    updated_at=now))
    session.execute(
        sa.update(_STEPS)
        .where(step.order_id.in_(locked),
               step.status.in_([models.STEP_WAITING, models.STEP_PENDING]),
               ~models.delivery_steps(step.name))
        .values(generation=step.generation + 1,
                status=models.STEP_CANCELLED, last_error='order cancelled',
                finished_at=now, updated_at=now, owner=None,
                claimed_at=None, lease_expires_at=None, dispatched_at=None))
    session.execute(sa.delete(_RETRY_TASKS).where(
        task.order_id.in_(locked), ~models.delivery_steps(task.retry_task)))
    return locked
