"""The events of an order, written in the transaction of their change.

Every change of an order's status is an event named after the new
status; a terminal status is followed by ``order.end``, the last event of
the order until an operator resumes an ERROR order (``order.resumed``:
its events go on after its ``order.end``). Order types that ask for it
(``step_events``) add an event for each step that ends. ``record``
appends events to an order that has deliveries and wakes those that had
sent everything, so that they send the new ones, and those whose first
run was waiting (``[notifications] first_run_delay_seconds``): the
order's first events then go in one run.
"""

import datetime

from worker.db import models
from worker import values

CREATED = 'order.created'
CANCELLING = 'order.cancelling'
ACTIVE = 'order.active'
ERROR = 'order.error'
CANCELLED = 'order.cancelled'
#: An ERROR order was resumed: it is PENDING again.
RESUMED = 'order.resumed'
#: The last event of an order, after its terminal status.
END = 'order.end'
STEP_DONE = 'step.done'
STEP_FAILED = 'step.failed'

_OF_STATUS = {models.PENDING: CREATED, models.CANCELLING: CANCELLING,
              models.ACTIVE: ACTIVE, models.ERROR: ERROR,
              models.CANCELLED: CANCELLED}


#: One event to write (``worker.values``, where the data layer finds it).
Event = values.Event


def status_changed(status, reason=None):
    """The events of an order's move to ``status``: its own, and
    ``order.end`` after a terminal one."""
    detail = {'reason': reason} if reason else None
    found = [Event(_OF_STATUS[status], status, detail=detail)]
    if status in models.TERMINAL_STATUSES:
        found.append(Event(END, status))
    return found


def resumed():
    """The events of an ERROR order's move back to PENDING."""
    return [Event(RESUMED, models.PENDING)]


def step_ended(step, status, order_status, error=None):
    """The event of a step that ended DONE or FAILED."""
    return Event(STEP_DONE if status == models.STEP_DONE else STEP_FAILED,
                 order_status, step=step,
                 detail={'error': error} if error else None)


def record(session, repositories, order_id, events, now, request=None):
    """Append ``events`` to the order's, if it has deliveries.

    The caller's transaction must hold the order's row (it changed its
    status, or ``notifications.lock_orders``).

    :param request: the order's ``worker.values.RequestIds``, which the
        casts of the deliveries woken carry.

    :returns: the deliveries woken, as ``worker.values.StepRef`` to cast
        once the transaction committed; the others are sending, retrying or
        waiting for their URL, and will send these events in turn.
    """
    return record_many(session, repositories,
                       [(order_id, events, request)], now)


def record_many(session, repositories, recorded, now):
    """``record`` for several orders, each at most once, in a few
    statements whatever their number: one read of their deliveries, the
    events' (``notifications.add_events_many``: one read, one INSERT),
    one UPDATE waking the finished deliveries and those whose first run
    waits (whose retry rows go).

    :param recorded: ``[(order_id, events, request), ...]``; the caller's
        transaction holds each order's row.
    :returns: the deliveries woken, as ``worker.values.StepRef``.
    """
    store = repositories.notifications
    recorded = [(order_id, list(events), request)
                for order_id, events, request in recorded if events]
    deliveries = store.deliveries_of_orders(
        session, [order_id for order_id, _, _ in recorded])
    if not deliveries:
        return []
    store.add_events_many(session, {
        order_id: events for order_id, events, _ in recorded
        if order_id in deliveries}, now)
    woken, first_runs = [], []
    for order_id, _, request in recorded:
        for name, (status, generation, waiting) in sorted(
                deliveries.get(order_id, {}).items()):
            if status == models.STEP_DONE or waiting:
                woken.append(values.StepRef(name, order_id, generation,
                                            request))
            if waiting:
                first_runs.append((order_id, name))
    store.wake_many(session, sorted({step.order_id for step in woken}), now)
    # Cast now: the retry row that would have started them later goes.
    repositories.retry_tasks.delete_for_steps(session, first_runs)
    return woken


def delivered_sequence(step):
    """The last event a delivery's URL acknowledged (its step's output)."""
    output = step.output if step is not None else None
    if isinstance(output, dict):
        value = output.get('delivered_sequence')
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0


def payload(event, project_id):
    """The JSON object sent for one ``NotificationEvent`` of an order of
    ``project_id``.

    ``event_id`` is unique: a receiver drops what it already has, as
    at-least-once delivery sends some events twice.
    """
    body = {
        'event_id': event.event_id,
        'order_id': event.order_id,
        'project_id': project_id,
        'sequence': event.sequence,
        'time': _iso(event.created_at),
        'status': event.status,
        'event': event.event,
    }
    if event.step is not None:
        body['step'] = event.step
    if event.detail:
        body['detail'] = event.detail
    return body


def _iso(moment):
    """A naive UTC time in ISO 8601 with its zone, as clients parse it."""
    return moment.replace(tzinfo=datetime.timezone.utc).isoformat(
        timespec='microseconds').replace('+00:00', 'Z')
