"""Create and cancel orders, as an API server would.

Shared by the operator commands, the demo and the benchmarks: the orders
are committed first, then their first steps are cast. A cast that fails
loses nothing: the steps are recorded as dispatched, and the retry daemon
dispatches them again after ``[scheduler] dispatch_deadline_seconds``.
"""

import dataclasses
import typing

from oslo_log import log as logging

from worker import context as context_module
from worker.db import models
from worker.db import orders
from worker.notifications import events
from worker.notifications import subscriptions
from worker import rpcapi

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Created:
    """What ``create`` made: the orders, and the deliveries of their
    events that each has (``notify:<url id>`` steps)."""

    orders: list[typing.Any]
    deliveries: tuple[str, ...]


def create_orders(database, worker_api, workflow, meta, count, now,
                  rows_per_cast=50, priority=0, notify=(),
                  origin=orders.NO_ORIGIN):
    """``create``, returning the orders created only."""
    return create(database, worker_api, workflow, meta, count, now,
                  rows_per_cast, priority, notify, origin).orders


def create(database, worker_api, workflow, meta, count, now,
           rows_per_cast=50, priority=0, notify=(),
           origin=orders.NO_ORIGIN):
    """Create ``count`` PENDING orders of ``workflow``; cast their roots.

    The casts go in messages of up to ``rows_per_cast`` steps.

    :param worker_api: a ``worker.rpcapi.WorkerAPI``, or None to leave the
        first casts to the retry daemon.
    :param priority: the orders' priority (``worker.db.models``), which
        their retry rows get.
    :param notify: URLs that receive each order's events (checked by
        ``worker.notifications.subscriptions.urls_for_order``): each
        order gets a delivery to each, and its first event,
        ``order.created``.
    :param origin: the orders' project, idempotency key and request ids
        (``worker.db.orders.Origin``).
    :returns: a ``Created``.
    :raises ValueError: ``priority`` is not a priority.
    :raises oslo_db.exception.DBDuplicateEntry: the project has an order
        with the origin's idempotency key; nothing was created.
    """
    repositories = database.repositories
    deliveries = [models.delivery_name(url_id) for url_id in
                  subscriptions.url_ids(database, notify, now)]
    with database.session() as session, session.begin():
        created = [repositories.orders.create(session, workflow, meta, now,
                                              priority=priority,
                                              origin=origin)
                   for _ in range(count)]
        for order in created:
            if deliveries:
                repositories.steps.create(session, order.id, deliveries,
                                          set(deliveries), now)
                events.record(session, repositories, order.id,
                              events.status_changed(models.PENDING), now)
    request = context_module.of_order(origin)
    steps = [rpcapi.Step(name, order.id, 0, request)
             for order in created
             for name in workflow.roots() + tuple(deliveries)]
    cast_steps(worker_api, steps, rows_per_cast,
               context=context_module.for_ids(request))
    return Created(created, tuple(deliveries))


def cast_steps(worker_api, steps, rows_per_cast=50, context=None):
    """Cast ``steps`` in messages of up to ``rows_per_cast``.

    :param context: the request the casts are made for (its ids are the
        messages'), or None.

    Returns how many steps could not be cast (logged; the retry daemon
    dispatches them after their dispatch deadline).
    """
    failed = 0
    for start in range(0, len(steps), rows_per_cast):
        chunk = steps[start:start + rows_per_cast]
        try:
            if worker_api is None:
                raise RuntimeError('no RPC client')
            worker_api.run_steps(chunk, context=context)
        except Exception as exc:
            failed += len(chunk)
            error = exc
    if failed:
        LOG.warning('%d of %d steps could not be cast (%s); the retry '
                    'daemon dispatches them after [scheduler] '
                    'dispatch_deadline_seconds', failed, len(steps), error)
    return failed


@dataclasses.dataclass(frozen=True)
class Cancelled:
    """What cancelling one order did."""

    #: Steps whose claims were revoked or that will never start.
    revoked: tuple[str, ...]
    #: The compensation step cast, or None.
    compensation: rpcapi.Step | None


def cancel_order(database, worker_api, workflow, order_id, reason, now,
                 request=None):
    """Cancel a PENDING order; start its type's compensation step, if any.

    Every open step is cancelled and its token moved forward, so a run
    still going elsewhere has no effect; its retry rows are deleted. The
    order is CANCELLED at once, or CANCELLING until its compensation step
    ends.

    :param request: the order's ``worker.context.RequestIds``, which the
        casts carry.

    :returns: a ``Cancelled``, or None if the order is not PENDING.
    """
    repositories = database.repositories
    compensation = workflow.compensation
    with database.session() as session, session.begin():
        if not repositories.orders.cancel(session, order_id, now, reason,
                                          compensating=bool(compensation)):
            return None
        revoked = repositories.steps.revoke_open(session, order_id, now,
                                                 'order cancelled')
        repositories.retry_tasks.delete_for_order(session, order_id)
        if compensation:
            repositories.steps.add(session, order_id, compensation.name, now)
        woken = events.record(
            session, repositories, order_id, events.status_changed(
                models.CANCELLING if compensation else models.CANCELLED,
                reason), now, request=request)
    step = (rpcapi.Step(compensation.name, order_id, 0, request)
            if compensation else None)
    cast_steps(worker_api, ([step] if step else []) + woken,
               context=context_module.for_ids(request))
    return Cancelled(revoked=tuple(revoked), compensation=step)


def retry_rows_by_step(tasks):
    """``{step: retry row}`` of one order's retry rows.

    A step has one row at a time, save for a moment (a row cast and not
    yet deleted); then the unparked row due first is the one that counts.
    """
    rows = {}
    for task in sorted(tasks, key=lambda task: (task.parked, task.retry_at,
                                                task.id), reverse=True):
        rows[task.retry_task] = task
    return rows


def in_declared_order(workflow, steps):
    """``[(name, step)]`` of ``steps`` (``{name: step}``) in the order the
    workflow declares them, the compensation last, unknown names after."""
    declared = list(workflow.names) if workflow else []
    if workflow and workflow.compensation:
        declared.append(workflow.compensation.name)
    names = [name for name in declared if name in steps]
    names += sorted(set(steps) - set(names))
    return [(name, steps[name]) for name in names]


def step_status(step, retry_row):
    """What one step is doing, for people: ``WAITING``, ``QUEUED``
    (cast, not taken up), ``RUNNING``, ``RETRYING`` (a retry row waits),
    ``PARKED``, or its final status."""
    if step.status != models.STEP_PENDING:
        return step.status
    if step.owner:
        return 'RUNNING'
    if retry_row is not None:
        return 'PARKED' if retry_row.parked else 'RETRYING'
    return 'QUEUED'
