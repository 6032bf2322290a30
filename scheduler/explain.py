"""Why an order has not moved, in one sentence (``order explain``).

Read-only: the order, its steps and retry rows, the live services, under
the same liveness rules the retry daemon applies (``scheduler.liveness``).
"""

import dataclasses
import datetime

from scheduler import liveness
from worker.db import models
from worker import order_types


@dataclasses.dataclass(frozen=True)
class Why:
    """The order's status and the sentence that explains it."""

    status: str
    sentence: str


def explain_order(database, conf, order_id, now):
    """Return the ``Why`` of order ``order_id`` as of ``now``.

    :raises LookupError: no such order.
    """
    repositories = database.repositories
    cutoffs = liveness.Cutoffs.at(now, conf)
    with database.reader() as session, session.begin():
        order = repositories.orders.get(session, order_id)
        if order is None:
            raise LookupError('no order %s' % order_id)
        steps = repositories.steps.for_order(session, order_id)
        retries = {task.retry_task: task for task in
                   repositories.retry_tasks.list_tasks(session,
                                                       order_id=order_id)}
        live = set(repositories.services.live_names(session,
                                                    cutoffs.alive_since))
        daemons = repositories.services.live_names(
            session, cutoffs.alive_since, kind=models.SCHEDULER)
    if order.status in models.TERMINAL_STATUSES:
        return Why(order.status, _terminal(order))
    try:
        workflow = order_types.get(order.type)
    except order_types.UnknownOrderType as exc:
        return Why(order.status, 'no worker can run it: %s' % exc)
    reasons = [_step_reason(name, step, retries.get(name), live,
                            bool(daemons), cutoffs, conf)
               for name, step in steps.items()
               if step.status == models.STEP_PENDING]
    done = {name for name, step in steps.items()
            if step.status == models.STEP_DONE}
    blocked = sorted(name for name, step in steps.items()
                     if step.status == models.STEP_WAITING)
    waiting_for = sorted({before for name in blocked
                          if workflow.has_step(name)
                          for before in workflow.step(name).after
                          if before not in done})
    if not reasons:
        return Why(order.status, 'no step is running or due: its steps '
                   'are %s' % ', '.join('%s %s' % (name, step.status)
                                        for name, step in steps.items()))
    sentence = '; '.join(reasons)
    if blocked:
        sentence += ('; %s wait(s) for %s'
                     % (', '.join(blocked), ', '.join(waiting_for)))
    return Why(order.status, sentence)


def _terminal(order):
    if order.status == models.ACTIVE:
        return 'ACTIVE: every step is done'
    return '%s: %s' % (order.status, order.error_reason)


def _step_reason(name, step, retry, live, daemons_alive, cutoffs, conf):
    """Why one PENDING step has not finished."""
    if step.owner:
        if step.owner not in live:
            return ('step %s was running on %s, which stopped '
                    'heartbeating; the retry daemon takes it back at its '
                    'next recovery' % (name, step.owner))
        if step.lease_expires_at is not None:
            return ('step %s is running on %s until its lease ends at %s'
                    % (name, step.owner, _at(step.lease_expires_at)))
        return 'step %s is running on %s' % (name, step.owner)
    if retry is not None:
        if retry.parked:
            return ('step %s has a parked retry row (%d), cast only once '
                    'requeued: %s' % (name, retry.id, retry.park_reason))
        if retry.retry_at > cutoffs.now:
            return ('step %s waits for a retry at %s (%s)'
                    % (name, _at(retry.retry_at),
                       step.last_error or 'polling'))
        if not daemons_alive:
            return ('step %s is due since %s, but no barbican-retry daemon '
                    'is alive' % (name, _at(retry.retry_at)))
        return 'step %s is due; the next pass casts it' % name
    if step.dispatched_at is not None:
        deadline = step.dispatched_at + datetime.timedelta(
            seconds=conf.scheduler.dispatch_deadline_seconds)
        if deadline <= cutoffs.now:
            return ('step %s was cast at %s and no worker took it up: a '
                    'lost dispatch, taken back at the next recovery'
                    % (name, _at(step.dispatched_at)))
        return ('step %s was cast at %s and waits for a worker; if none '
                'takes it up it is taken back at %s'
                % (name, _at(step.dispatched_at), _at(deadline)))
    return 'step %s is PENDING with no dispatch, owner or retry row' % name


def _at(moment):
    return moment.isoformat(sep=' ', timespec='seconds')
