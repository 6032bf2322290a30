"""The transactions of the front door: create, cancel and resume orders
(signals: ``worker.api.signalling``).

Over 400 lines, and one module all the same: each command sits beside
its batch form (``cancel_batch``, ``resume_batch``, for bulk actions),
which must make the same writes, and a test compares their effects.

Each command writes in one transaction (run again whole when it lost a
race) and **returns** what it wrote and the steps to cast, as values: it
neither casts nor announces. The caller (``worker.api.orders.OrderAPI``,
the operator commands, the benchmarks) announces the change on the bus
once it committed, then casts the steps (``worker.api.casts``), so that
its announcement comes before any a worker makes. A cast that fails
loses nothing: the steps are recorded as dispatched, and the retry
daemon dispatches them again after ``[scheduler]
dispatch_deadline_seconds``.
"""

import dataclasses
import datetime
import typing

from worker.api import admission
from worker.api import quotas
from worker.db import models
from worker.db import rows
from worker.db import session as db_session
from worker.notifications import events
from worker.notifications import subscriptions
from worker import rpcapi
from worker import values


@dataclasses.dataclass(frozen=True)
class Created:
    """What ``create`` made: the orders, the deliveries of their events
    that each has (``notify:<url id>`` steps), and the steps to cast."""

    orders: list[typing.Any]
    deliveries: tuple[str, ...]
    #: The orders' first steps and deliveries that run at once.
    to_cast: tuple[values.StepRef, ...] = ()


def create(database, request, now):
    """Create the PENDING orders of ``request`` (a
    ``worker.api.requests.CreateOrders``); return a ``Created``.

    :raises ValueError: the priority is not a priority.
    :raises admission.TooManyPending: the orders would put more than
        ``max_pending`` orders of the type PENDING; nothing was written.
    :raises quotas.OverQuota: the orders would put more of the project's
        orders PENDING than its quota; nothing was written.
    :raises oslo_db.exception.DBDuplicateEntry: the project has an order
        with the origin's idempotency key; nothing was created.
    """
    workflow = request.workflow
    if request.not_before is not None and request.not_before <= now:
        request = dataclasses.replace(request, not_before=None)
    if request.notify:
        # Their URL rows are written before the orders' transaction.
        admission.precheck(database, workflow.type_name,
                           request.max_pending, request.count)
        quotas.precheck(database, request.origin.project_id,
                        request.project_quota, request.count)
    deliveries = tuple(models.delivery_name(url_id) for url_id in
                       subscriptions.url_ids(database, request.notify, now))
    first_run_at = (
        now + datetime.timedelta(seconds=request.first_run_delay)
        if deliveries and request.first_run_delay > 0 else None)
    created = _admitted(database, request, now, deliveries, first_run_at)
    roots = () if request.not_before is not None else workflow.roots()
    cast_now = roots + (deliveries if first_run_at is None else ())
    ids = values.request_ids_of(request.origin)
    return Created(created, deliveries, tuple(
        values.StepRef(name, order.id, 0, ids, workflow.type_name,
                       request.origin.trace_context)
        for order in created for name in cast_now))


def _admitted(database, request, now, deliveries, first_run_at):
    """``_write_orders``, once more after each lock row it found missing
    (the type's admission, the project's quota) was inserted."""
    for _ in range(2):
        try:
            return _write_orders(database, request, now, deliveries,
                                 first_run_at)
        except admission.MissingLock:
            admission.add_lock(database, request.workflow.type_name, now)
        except quotas.MissingRow:
            quotas.add_row(database, request.origin.project_id, now)
    return _write_orders(database, request, now, deliveries, first_run_at)


@db_session.retry_lost_race
def _write_orders(database, request, now, deliveries, first_run_at):
    """``create``'s transaction: admission, the orders, their steps, the
    retry rows of an order that starts later and of deliveries whose first
    run waits, the deliveries' first event. Run again whole when it lost
    a race (a deadlock; on Galera, another node's create of a bounded type
    certified first)."""
    repositories = database.repositories
    workflow = request.workflow
    with database.session() as session, session.begin():
        admission.admit(session, repositories, workflow.type_name,
                        request.max_pending, request.count, now)
        quotas.admit(session, repositories.quotas,
                     request.origin.project_id, request.project_quota,
                     request.count, now)
        created = [repositories.orders.create(
            session, workflow, request.meta, now,
            priority=request.priority, origin=request.origin,
            not_before=request.not_before)
            for _ in range(request.count)]
        if request.not_before is not None:
            repositories.retry_tasks.add_many(session, _first_retries(
                created, workflow.roots(), request.not_before, now,
                request))
        if first_run_at is not None:
            repositories.retry_tasks.add_many(session, _first_retries(
                created, deliveries, first_run_at, now, request))
        if deliveries:
            for order in created:
                repositories.steps.create(session, order.id, deliveries,
                                          set(deliveries), now,
                                          dispatched=first_run_at is None)
            # Added, not recorded: there is no delivery to wake yet (the
            # new ones are cast, or wait for their first run).
            repositories.notifications.add_events_many(session, {
                order.id: events.status_changed(models.PENDING)
                for order in created}, now)
    return created


def _first_retries(created, roots, due, now, request):
    """The retry rows (``retry_tasks.add_many``'s) that start the
    ``roots`` of each order ``created`` at ``due``: generation 0, as a
    cast at creation would carry."""
    ids = values.request_ids_of(request.origin)
    rows = []
    for order in created:
        for name in roots:
            args, kwargs = rpcapi.retry_arguments(
                values.StepRef(name, order.id, 0, ids))
            rows.append(dict(order_id=order.id, retry_task=name,
                             retry_at=due, args=args, kwargs=kwargs,
                             now=now, priority=request.priority))
    return rows


@dataclasses.dataclass(frozen=True)
class Cancelled:
    """What cancelling one order did."""

    #: Steps whose claims were revoked or that will never start.
    revoked: tuple[str, ...]
    #: The compensation step to cast, or None.
    compensation: values.StepRef | None
    #: The steps to cast: the compensation step, and the deliveries
    #: the order's ``order.cancelled`` event woke.
    to_cast: tuple[values.StepRef, ...] = ()


def cancel(database, workflow, order_id, reason, now, request=None,
           requested_by=None):
    """Cancel a PENDING order; its type's compensation step, if any, is
    to be cast.

    Every open step is cancelled and its token moved forward, so a run
    still going elsewhere has no effect; its retry rows are deleted. The
    order is CANCELLED at once, or CANCELLING until its compensation step
    ends.

    :param request: the order's ``worker.values.RequestIds``, which the
        casts carry.
    :param requested_by: who asked (a ``worker.api.values.Requester``),
        recorded in the order's history with the reason; or None.
    :returns: a ``Cancelled``, or None if the order is not PENDING.
    """
    with database.session() as session, session.begin():
        return _cancel_in(session, database, workflow, order_id, reason,
                          now, request, requested_by)


@db_session.retry_lost_race
def cancel_batch(database, orders, reason, now):
    """``cancel`` each of ``orders`` (``(workflow, order_id, request)``
    triples) in one transaction of a few statements whatever their
    number (``bulk_orders.cancel_many``, ``events.record_many``), run
    again whole when it lost a race; return ``{order_id: Cancelled}`` of
    those that were PENDING (their ``revoked`` is not read: ``()``).
    """
    by_id = {order_id: (workflow, request)
             for workflow, order_id, request in orders}
    compensating = {order_id for order_id, (workflow, _) in by_id.items()
                    if workflow.compensation}
    repositories, queries = database.repositories, database.queries
    with database.session() as session, session.begin():
        done = queries.bulk_orders.cancel_many(session, list(by_id), now,
                                               reason, compensating)
        for order_id in done:
            if order_id in compensating:
                queries.steps.add(session, order_id, by_id[order_id][
                    0].compensation.name, now)
        woken = events.record_many(session, repositories, [
            (order_id, events.status_changed(
                models.CANCELLING if order_id in compensating
                else models.CANCELLED, reason), by_id[order_id][1])
            for order_id in done], now)
    return {order_id: _cancelled(by_id[order_id][0], order_id,
                                 by_id[order_id][1], (), [
                                     step for step in woken
                                     if step.order_id == order_id])
            for order_id in done}


def _cancelled(workflow, order_id, request, revoked, woken):
    """The ``Cancelled`` of one order: its compensation step, if its type
    has one, and the deliveries ``woken``."""
    compensation = workflow.compensation
    step = (values.StepRef(compensation.name, order_id, 0, request,
                           workflow.type_name)
            if compensation else None)
    return Cancelled(revoked=tuple(revoked), compensation=step,
                     to_cast=tuple(([step] if step else []) + list(woken)))


def _cancel_in(session, database, workflow, order_id, reason, now,
               request, requested_by):
    """``cancel``'s writes in the caller's transaction."""
    repositories, queries = database.repositories, database.queries
    compensation = workflow.compensation
    if not queries.orders.cancel(session, order_id, now, reason,
                                 compensating=bool(compensation)):
        return None
    revoked = repositories.steps.revoke_open(session, order_id, now,
                                             'order cancelled')
    repositories.retry_tasks.delete_for_order(session, order_id)
    if compensation:
        queries.steps.add(session, order_id, compensation.name, now)
    woken = events.record(
        session, repositories, order_id, events.status_changed(
            models.CANCELLING if compensation else models.CANCELLED,
            reason), now, request=request)
    _record_request(session, repositories, order_id, models.RUN_CANCEL, now,
                    requested_by, reason)
    return _cancelled(workflow, order_id, request, revoked, woken)


@dataclasses.dataclass(frozen=True)
class Restart:
    """Which steps of an ERROR order run again when it is resumed."""

    #: Runnable at once: every step they come after is DONE.
    start: tuple[str, ...]
    #: WAITING until the steps they come after are DONE.
    wait: tuple[str, ...]


def restart_plan(workflow, statuses):
    """The ``Restart`` of an order whose workflow steps are ``statuses``
    (``{name: status}``).

    Every step not DONE runs again: the one that failed, those its
    failure cancelled (parallel ones among them) and those that never
    ran. Deliveries (``notify:*``) are not workflow steps: they go on as
    they are. A declared step the order has no row for is left out.
    """
    done = {name for name, status in statuses.items()
            if status == models.STEP_DONE}
    again = [name for name in workflow.names
             if name in statuses and name not in done]
    ready = set(workflow.ready(done, done))
    return Restart(start=tuple(name for name in again if name in ready),
                   wait=tuple(name for name in again if name not in ready))


class NothingToResume(Exception):
    """An ERROR order whose workflow steps are all DONE: resuming it would
    leave it PENDING with nothing to run."""


@dataclasses.dataclass(frozen=True)
class Resumed:
    """What resuming one order did."""

    #: The steps to cast to run again.
    started: tuple[values.StepRef, ...]
    #: The steps WAITING for those.
    waiting: tuple[str, ...]
    #: The steps to cast: ``started``, and the deliveries the order's
    #: ``order.resumed`` event woke.
    to_cast: tuple[values.StepRef, ...] = ()


def resume(database, workflow, order_id, now, request=None,
           requested_by=None):
    """Put an ERROR order back to PENDING; its unfinished steps are to
    run again.

    In one transaction, conditional on the order being ERROR: the order
    is PENDING with no error reason; its DONE steps stay DONE; the others
    restart from scratch under a new generation (``steps.restart``),
    those whose predecessors are all DONE PENDING (to be cast after the
    commit), the rest WAITING; the retry rows of its workflow are deleted
    (those of the old generation would have no effect anyway); and an
    ``order.resumed`` event wakes its deliveries, if it has any. Each
    step keeps its idempotency key, which depends on the order and the
    step only.

    :param request: the order's ``worker.values.RequestIds``, which the
        casts carry.
    :param requested_by: who asked (a ``worker.api.values.Requester``),
        recorded in the order's history; or None.
    :returns: a ``Resumed``, or None if the order is not ERROR (another
        request resumed it first).
    :raises NothingToResume: every workflow step is DONE (nothing was
        written).
    """
    written = _resume_in_a_transaction(database, workflow, order_id, now,
                                       request, requested_by)
    if written is None:
        return None
    return _resumed(workflow, order_id, request, written)


@db_session.retry_lost_race
def _resume_in_a_transaction(database, workflow, order_id, now, request,
                             requested_by):
    """``resume``'s writes: ``(plan, generations, woken)``, or None if
    the order is not ERROR. Run again whole when it lost a race (a
    deadlock; on Galera, another node's resume or delivery certified
    first): the second time, it finds the order PENDING."""
    with database.session() as session, session.begin():
        return _resume_in(session, database, workflow, order_id, now,
                          request, requested_by)


@db_session.retry_lost_race
def resume_batch(database, orders, now, requested_by=None):
    """``resume`` each of ``orders`` (``(workflow, order_id, request)``
    triples) in one transaction, run again whole when it lost a race.

    :returns: ``({order_id: Resumed}, {order_id: why})``: those resumed,
        and those that had nothing to resume (those no longer ERROR are
        in neither).
    """
    done, failed = {}, {}
    with database.session() as session, session.begin():
        for workflow, order_id, request in orders:
            try:
                written = _resume_in(session, database, workflow, order_id,
                                     now, request, requested_by)
            except NothingToResume as exc:
                failed[order_id] = str(exc)
                continue
            if written is not None:
                done[order_id] = _resumed(workflow, order_id, request,
                                          written)
    return done, failed


def _resumed(workflow, order_id, request, written):
    """The ``Resumed`` of ``_resume_in``'s ``written``."""
    plan, generations, woken = written
    started = tuple(values.StepRef(name, order_id, generations[name],
                                   request, workflow.type_name)
                    for name in plan.start)
    return Resumed(started=started, waiting=plan.wait,
                   to_cast=started + tuple(woken))


def _resume_in(session, database, workflow, order_id, now, request,
               requested_by):
    """``resume``'s writes in the caller's transaction, or None if the
    order is not ERROR.

    The plan is made from the steps read before the order's row is
    moved, so that an order with nothing to resume raises
    ``NothingToResume`` before anything is written (the other orders of
    a batch go on); the move is conditional on ERROR, so a concurrent
    resume that won leaves this one with None.
    """
    repositories, queries = database.repositories, database.queries
    steps = repositories.steps.for_order(session, order_id)
    plan = restart_plan(workflow, {name: step.status
                                   for name, step in steps.items()})
    if not plan.start:
        raise NothingToResume('every step of order %s is DONE' % order_id)
    if not queries.orders.resume(session, order_id, now):
        return None
    generations = queries.steps.restart(
        session, order_id, plan.start, plan.wait, now)
    repositories.retry_tasks.delete_for_order(session, order_id)
    woken = events.record(session, repositories, order_id,
                          events.resumed(), now, request=request)
    _record_request(session, repositories, order_id, models.RUN_RESUME, now,
                    requested_by, None)
    return plan, generations, woken


def _record_request(session, repositories, order_id, action, now,
                    requested_by, error):
    """Add the row of a cancel or a resume (``action``) to the order's
    history: who asked (None: not known) and, for a cancel, its reason
    (as ``error``: it becomes the order's ``error_reason``)."""
    repositories.history.add_many(session, [rows.StepRun(
        order_id, action, 0, 0, None, now, now, models.RUN_REQUESTED,
        error, requested_by.as_dict() if requested_by else None)])
