"""Create, cancel and resume orders, as an API server would.

Shared by the operator commands, the demo and the benchmarks: the orders
are committed first, then their first steps are cast. A cast that fails
loses nothing: the steps are recorded as dispatched, and the retry daemon
dispatches them again after ``[scheduler] dispatch_deadline_seconds``.
"""

import dataclasses
import datetime
import typing

from oslo_log import log as logging

from worker.common import admission
from worker import context as context_module
from worker.db import models
from worker.db import orders
from worker.db import session as db_session
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
                  origin=orders.NO_ORIGIN, first_run_delay=0.0):
    """``create``, returning the orders created only."""
    return create(database, worker_api, workflow, meta, count, now,
                  rows_per_cast, priority, notify, origin,
                  first_run_delay=first_run_delay).orders


def create(database, worker_api, workflow, meta, count, now,
           rows_per_cast=50, priority=0, notify=(),
           origin=orders.NO_ORIGIN, not_before=None, max_pending=None,
           first_run_delay=0.0, before_cast=None):
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
    :param not_before: when the orders start (naive UTC), or None for at
        once. A time after ``now``: their first steps are not cast; each
        gets a retry row due then, which the retry daemon casts as any
        other (their deliveries start at once: ``order.created`` is
        sent when they are created). At or before ``now``: at once.
    :param max_pending: the type's ``[order_type:T] max_pending``, or None
        for no bound (``worker.common.admission``).
    :param first_run_delay: seconds before the deliveries' first run
        (``[notifications] first_run_delay_seconds``): more than 0, they
        are not cast, but get a retry row due then, and the order's next
        event starts them sooner (``events.record``).
    :param before_cast: called with the orders created once they are
        committed, before their steps are cast (their announcements on
        the bus, which must come before any a worker makes).
    :returns: a ``Created``.
    :raises ValueError: ``priority`` is not a priority.
    :raises admission.TooManyPending: the orders would put more than
        ``max_pending`` orders of the type PENDING; nothing was written.
    :raises oslo_db.exception.DBDuplicateEntry: the project has an order
        with the origin's idempotency key; nothing was created.
    """
    if not_before is not None and not_before <= now:
        not_before = None
    if notify:
        # Their URL rows are written before the orders' transaction.
        admission.precheck(database, workflow.type_name, max_pending,
                           count)
    deliveries = tuple(models.delivery_name(url_id) for url_id in
                       subscriptions.url_ids(database, notify, now))
    request = context_module.of_order(origin)
    first_run_at = (now + datetime.timedelta(seconds=first_run_delay)
                    if deliveries and first_run_delay > 0 else None)
    writing = (database, workflow, meta, count, now, priority, origin,
               not_before, max_pending, deliveries, first_run_at)
    try:
        created = _write_orders(*writing)
    except admission.MissingLock:
        admission.add_lock(database, workflow.type_name, now)
        created = _write_orders(*writing)
    roots = () if not_before is not None else workflow.roots()
    cast_now = roots + (deliveries if first_run_at is None else ())
    steps = [rpcapi.Step(name, order.id, 0, request, workflow.type_name,
                         origin.trace_context)
             for order in created
             for name in cast_now]
    if before_cast is not None:
        before_cast(created)
    cast_steps(worker_api, steps, rows_per_cast,
               context=context_module.for_ids(request))
    return Created(created, deliveries)


@db_session.retry_lost_race
def _write_orders(database, workflow, meta, count, now, priority, origin,
                  not_before, max_pending, deliveries, first_run_at):
    """``create``'s transaction: admission, the orders, their steps, the
    retry rows of an order that starts later and of deliveries whose first
    run waits, the deliveries' first event. Run again whole when it lost
    a race (a deadlock; on Galera, another node's create of a bounded type
    certified first)."""
    repositories = database.repositories
    with database.session() as session, session.begin():
        admission.admit(session, repositories, workflow.type_name,
                        max_pending, count, now)
        created = [repositories.orders.create(session, workflow, meta, now,
                                              priority=priority,
                                              origin=origin,
                                              not_before=not_before)
                   for _ in range(count)]
        if not_before is not None:
            repositories.retry_tasks.add_many(session, _first_retries(
                created, workflow.roots(), not_before, now, priority,
                context_module.of_order(origin)))
        if first_run_at is not None:
            repositories.retry_tasks.add_many(session, _first_retries(
                created, deliveries, first_run_at, now, priority,
                context_module.of_order(origin)))
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


def _first_retries(created, roots, not_before, now, priority, request):
    """The retry rows (``retry_tasks.add_many``'s) that start the
    ``roots`` of each order ``created`` at ``not_before``: generation 0,
    as a cast at creation would carry."""
    rows = []
    for order in created:
        for name in roots:
            args, kwargs = rpcapi.retry_arguments(
                rpcapi.Step(name, order.id, 0, request))
            rows.append(dict(order_id=order.id, retry_task=name,
                             retry_at=not_before, args=args, kwargs=kwargs,
                             now=now, priority=priority))
    return rows


def cast_steps(worker_api, steps, rows_per_cast=50, context=None):
    """Cast ``steps`` in messages of up to ``rows_per_cast``, each to its
    topic (``rpcapi.Topics``).

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
    repositories, queries = database.repositories, database.queries
    compensation = workflow.compensation
    with database.session() as session, session.begin():
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
    step = (rpcapi.Step(compensation.name, order_id, 0, request,
                        workflow.type_name)
            if compensation else None)
    cast_steps(worker_api, ([step] if step else []) + woken,
               context=context_module.for_ids(request))
    return Cancelled(revoked=tuple(revoked), compensation=step)


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

    #: The steps cast to run again.
    started: tuple[rpcapi.Step, ...]
    #: The steps WAITING for those.
    waiting: tuple[str, ...]


def resume_order(database, worker_api, workflow, order_id, now,
                 request=None, before_cast=None):
    """Put an ERROR order back to PENDING and run its unfinished steps
    again.

    In one transaction, conditional on the order being ERROR: the order
    is PENDING with no error reason; its DONE steps stay DONE; the others
    restart from scratch under a new generation (``steps.restart``),
    those whose predecessors are all DONE PENDING and cast after the
    commit, the rest WAITING; the retry rows of its workflow are deleted
    (those of the old generation would have no effect anyway); and an
    ``order.resumed`` event wakes its deliveries, if it has any. Each
    step keeps its idempotency key, which depends on the order and the
    step only.

    :param request: the order's ``worker.context.RequestIds``, which the
        casts carry.
    :param before_cast: called once the order is resumed, before its
        steps are cast (as ``create``'s).
    :returns: a ``Resumed``, or None if the order is not ERROR (another
        request resumed it first).
    :raises NothingToResume: every workflow step is DONE (nothing was
        written).
    """
    written = _resume_in_a_transaction(database, workflow, order_id, now,
                                       request)
    if written is None:
        return None
    plan, generations, woken = written
    started = tuple(rpcapi.Step(name, order_id, generations[name], request,
                                workflow.type_name)
                    for name in plan.start)
    if before_cast is not None:
        before_cast()
    cast_steps(worker_api, list(started) + woken,
               context=context_module.for_ids(request))
    return Resumed(started=started, waiting=plan.wait)


@db_session.retry_lost_race
def _resume_in_a_transaction(database, workflow, order_id, now, request):
    """``resume_order``'s writes: ``(plan, generations, woken)``, or None
    if the order is not ERROR. Run again whole when it lost a race (a
    deadlock; on Galera, another node's resume or delivery certified
    first): the second time, it finds the order PENDING."""
    repositories, queries = database.repositories, database.queries
    with database.session() as session, session.begin():
        if not queries.orders.resume(session, order_id, now):
            return None
        steps = repositories.steps.for_order(session, order_id)
        plan = restart_plan(workflow, {name: step.status
                                       for name, step in steps.items()})
        if not plan.start:
            # Raised inside the transaction: the move above rolls back.
            raise NothingToResume('every step of order %s is DONE'
                                  % order_id)
        generations = queries.steps.restart(
            session, order_id, plan.start, plan.wait, now)
        repositories.retry_tasks.delete_for_order(session, order_id)
        woken = events.record(session, repositories, order_id,
                              events.resumed(), now, request=request)
    return plan, generations, woken


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
