"""Why an order has not moved, in one sentence (``order explain``).

Read-only: the order, its steps and retry rows, the live services, under
the same liveness rules the retry daemon applies (``scheduler.liveness``).
"""

import dataclasses
import datetime

from scheduler import liveness
from worker.api import pausing
from worker.api import values
from worker.conf import order_types as type_conf
from worker.db import models
from worker import order_types


@dataclasses.dataclass(frozen=True)
class Why:
    """The order's status and the sentence that explains it."""

    status: str
    sentence: str
    #: The version of its type's graph it runs on (``None``: created
    #: before versions were recorded, and not found among the declared
    #: graphs here).
    version: str | None = None


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
        retries = values.retry_rows_by_step(
            repositories.retry_tasks.list_tasks(session, order_id=order_id))
        live = set(repositories.services.live_names(session,
                                                    cutoffs.alive_since))
        daemons = repositories.services.live_names(
            session, cutoffs.alive_since, kind=models.SCHEDULER)
        found = repositories.pauses.matching(session, [order_id])
    if order.status in models.TERMINAL_STATUSES:
        return Why(order.status, _terminal(order), order.workflow_version)
    try:
        workflow = order_types.get(order.type).of_order(
            order.workflow_version, steps)
    except order_types.UnknownOrderType as exc:
        return Why(order.status, 'cannot explain it here: %s (install '
                   'the type on this host)' % exc, order.workflow_version)
    except order_types.UnknownWorkflowVersion as exc:
        return Why(order.status, 'no worker of this release runs it: %s; '
                   'a worker whose type declares its graph does (a newer '
                   'release, or one that keeps it in previous_workflows)'
                   % exc, order.workflow_version)
    why = _pending(order, workflow, steps, retries, found, live, daemons,
                   cutoffs, conf)
    return dataclasses.replace(why, version=workflow.version)


def _pending(order, workflow, steps, retries, found, live, daemons, cutoffs,
             conf):
    """The ``Why`` of a live ``order`` that runs on ``workflow``;
    ``found``: the pauses that may hold it."""
    steps = dict(values.in_declared_order(workflow, steps))
    # A type's own topic is named: a cast that no worker takes up may be
    # one that no barbican-worker --topic serves.
    topic = type_conf.topic(conf, order.type)
    topic = None if topic == conf.worker.topic else topic
    reasons = {}
    for name, step in steps.items():
        if step.status == models.STEP_PENDING:
            reason = _pause_reason(step, retries.get(name), found) or \
                _step_reason(step, retries.get(name), live, bool(daemons),
                             cutoffs, conf, None if models.is_delivery(name)
                             else topic)
            if reason.startswith(_WAITING):
                reason += _signalled(workflow, name, order.id)
            reasons.setdefault(reason, []).append(name)
    if not reasons:
        return Why(order.status, 'no step is running or due: its steps '
                   'are %s' % ', '.join('%s %s' % (name, step.status)
                                        for name, step in steps.items()))
    parts = ['%s %s %s' % ('step' if len(names) == 1 else 'steps',
                           ', '.join(names), reason)
             for reason, names in reasons.items()]
    held = pausing.paused_by(conf, found, order, [
        retry.waiting_for for retry in retries.values()])
    return Why(order.status, _paused(held) + _later(order, cutoffs.now) +
               '; '.join(parts + _held_back(workflow, steps)))


#: How the reason of a step that waits for its retry row starts.
_WAITING = 'waiting for a retry at'


def _paused(held):
    """What starts the sentence of an order a pause holds; ''."""
    if not held:
        return ''
    return 'paused (%s): its steps wait, taking nothing, until unpaused; ' \
        % ', '.join(_pause(pause) for pause in held)


def _pause(pause):
    """A pause in a few words: ``order_type fanout since ...: why``."""
    return '%s %s since %s%s' % (pause.target, pause.name,
                                 _at(pause.created_at),
                                 ': %s' % pause.reason if pause.reason
                                 else '')


def _pause_reason(step, retry, found):
    """Why a PENDING step a pause holds waits, after "step NAME"; None
    for any other step. ``found``: the pauses that may hold its order."""
    if step.owner or retry is None or retry.parked:
        return None
    pause_id = pausing.pause_id_of(retry.waiting_for)
    if pause_id is None:
        return None
    pause = {pause.id: pause for pause in found}.get(pause_id)
    if pause is None:
        return ('waited for a pause that was lifted: it is cast again at '
                '%s' % _at(retry.retry_at))
    return ('is held by the pause of %s: the unpause casts it (else it is '
            'checked again at %s)' % (_pause(pause), _at(retry.retry_at)))


def _later(order, now):
    """What starts the sentence of an order created to start later and
    not started yet; '' for any other."""
    if order.not_before is None or order.not_before <= now:
        return ''
    return ('created to start later: it starts at %s (not_before), in %s; '
            % (_at(order.not_before),
               datetime.timedelta(seconds=round(
                   (order.not_before - now).total_seconds()))))


def _held_back(workflow, steps):
    """What the WAITING steps that wait for no other WAITING step wait
    for: the steps held back by those that run or are due."""
    waiting = {name for name, step in steps.items()
               if step.status == models.STEP_WAITING}
    parts = []
    for name in sorted(waiting):
        before = (workflow.step(name).after if workflow.has_step(name)
                  else ())
        if before and not set(before) & waiting:
            parts.append('step %s waits for steps %s' % (
                name, ', '.join(b for b in before
                                if steps.get(b) is None or
                                steps[b].status != models.STEP_DONE)))
    return parts


def _signalled(workflow, name, order_id):
    """What ends the wait of a step that declares signals sooner, after
    its reason (``_WAITING``); '' for any other step."""
    signals = (workflow.step(name).signals if workflow.has_step(name)
               else ())
    if not signals:
        return ''
    return (', or at once when a signal %s comes (order signal %s %s)'
            % (' or '.join(signals), order_id, signals[0]))


def _terminal(order):
    if order.status == models.ACTIVE:
        return 'ACTIVE: every step is done'
    if order.status == models.ERROR:
        return ('ERROR: %s (once the cause is fixed, `order resume %s` runs '
                'its steps that did not finish again)'
                % (order.error_reason, order.id))
    return '%s: %s' % (order.status, order.error_reason)


def _step_reason(step, retry, live, daemons_alive, cutoffs, conf,
                 topic=None):
    """Why a PENDING step has not finished, after "step NAME".

    :param topic: the step's topic if it is not ``[worker] topic``.
    """
    if step.owner:
        if step.owner not in live:
            return ('ran on %s, which stopped heartbeating: the retry '
                    'daemon takes it back at its next recovery' % step.owner)
        if step.lease_expires_at is not None and \
                step.lease_expires_at <= cutoffs.now:
            return ('ran on %s past its lease, which ended at %s: the '
                    'retry daemon takes it back at its next recovery'
                    % (step.owner, _at(step.lease_expires_at)))
        if step.lease_expires_at is not None:
            return ('running on %s until its lease ends at %s'
                    % (step.owner, _at(step.lease_expires_at)))
        return 'running on %s' % step.owner
    if retry is not None:
        if retry.parked:
            return ('has a parked retry row (%d), cast only once requeued: '
                    '%s' % (retry.id, retry.park_reason))
        if retry.waiting_for is not None:
            return ('waits for a free slot of resource %s: the run that '
                    'frees one wakes it (else it is cast again at %s)'
                    % (retry.waiting_for, _at(retry.retry_at)))
        if retry.retry_at > cutoffs.now:
            why = step.last_error or ('polling' if step.attempt
                                      else 'its first run')
            return '%s %s (%s)' % (_WAITING, _at(retry.retry_at), why)
        if not daemons_alive:
            return ('due since %s, but no barbican-retry daemon is alive'
                    % _at(retry.retry_at))
        return 'due: the next pass casts it'
    if step.dispatched_at is not None:
        deadline = step.dispatched_at + datetime.timedelta(
            seconds=conf.scheduler.dispatch_deadline_seconds)
        where = (' to topic %s (served by barbican-worker --topic %s)'
                 % (topic, topic) if topic else '')
        if deadline <= cutoffs.now:
            return ('cast%s at %s and not taken up by any worker: a lost '
                    'dispatch, taken back at the next recovery'
                    % (where, _at(step.dispatched_at)))
        return ('cast%s at %s, waiting for a worker; taken back at %s if '
                'none takes it up' % (where, _at(step.dispatched_at),
                                      _at(deadline)))
    return 'PENDING with no dispatch, owner or retry row'


def _at(moment):
    return moment.isoformat(sep=' ', timespec='seconds')
