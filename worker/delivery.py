"""A delivery's run: send its order's next events to its URL, in order.

A delivery is a step of its order (``notify:<url id>``), claimed and
fenced like any other. Its run reads the events after
``delivered_sequence`` and posts them one after the other, each only once
the one before was acknowledged, so that a receiver sees an order's
events first in ``sequence`` order (a run that lost its lease may send an
event again: receivers drop duplicates by ``event_id``). Its result is
written under the order's row lock, which every writer of events holds:

- every event acknowledged and none newer: the delivery is DONE, until
  the next event wakes it (``events.record``);
- newer events: it stays PENDING and is cast again at once;
- a request failed: it is retried through the retry scheduler after a
  back-off (``[notifications] retry_*``); after
  ``max_consecutive_failures`` in a row its URL becomes unavailable and
  the delivery WAITING, its events kept;
- its URL is unavailable: WAITING, until ``notification url enable``.
"""

import dataclasses
import datetime
import time

from worker.db import models
from worker.notifications import events as events_module
from worker import outcomes
from worker import policy as policy_module
from worker import rpcapi

#: Outcome kinds of a delivery (labels of the worker's step metric).
DELIVERED = 'delivered'
PAUSED = 'paused'


@dataclasses.dataclass(frozen=True)
class Sent:
    """What one run sent.

    :param delivered: the sequence of the last event acknowledged.
    :param sent: events acknowledged by this run.
    :param failure: why the request after them failed, or None.
    """

    delivered: int
    sent: int = 0
    failure: str | None = None


@dataclasses.dataclass(frozen=True)
class Paused:
    """The run found its URL unavailable and sent nothing."""

    delivered: int
    reason: str


def lease_seconds(conf):
    """A delivery run's lease: time for a few requests, and a margin."""
    return 60.0 + 2 * conf.notifications.timeout_seconds


def policy(conf):
    """The retry policy of deliveries, from ``[notifications]``.

    Never gives up: an event is kept until it is delivered; a URL that
    keeps failing becomes unavailable instead.
    """
    group = conf.notifications
    return policy_module.StepPolicy(
        backoff=policy_module.EXPONENTIAL,
        backoff_base_seconds=group.retry_base_seconds,
        backoff_max_seconds=group.retry_max_seconds,
        jitter=group.retry_jitter, max_attempts=2 ** 31 - 1,
        timeout_seconds=lease_seconds(conf))


def send(database, sender, conf, run, lease_until, clock):
    """Send the delivery's next events; returns ``Sent`` or ``Paused``.

    Stops at the first failure, after ``events_per_run`` events, or when
    one more request could outlast the run's lease.
    """
    repositories = database.repositories
    url_id = models.url_id_of(run.step)
    delivered = events_module.delivered_sequence(run.steps.get(run.step))
    group = conf.notifications
    with database.reader() as session:
        target = repositories.notifications.get_url(session, url_id)
        pending = repositories.notifications.events_after(
            session, run.order_id, delivered, group.events_per_run)
    if target is None:
        return Paused(delivered, 'its URL is gone')
    url = target.url
    if not target.available:
        return Paused(delivered, 'URL %s is unavailable' % url)
    sent = 0
    # Each request may take its timeout to connect and again to answer.
    room = datetime.timedelta(seconds=2 * group.timeout_seconds + 1)
    for event in pending:
        if clock() + room > lease_until:
            break
        started = time.monotonic()
        failure = sender.send(url, events_module.payload(event))
        if failure is not None:
            return Sent(delivered, sent, '%s (event %d, after %.1fs)' % (
                failure, event.sequence, time.monotonic() - started))
        delivered = event.sequence
        sent += 1
    return Sent(delivered, sent)


def write(session, repositories, conf, run, result, now):
    """Write a delivery's result; returns its ``outcomes.Outcome``.

    :raises outcomes.Superseded: the delivery moved on (its lease ended
        and another run took it).
    """
    store = repositories.notifications
    url_id = models.url_id_of(run.step)
    store.lock_order(session, run.order_id, now)

    def record(status, failures, last_error=None, dispatched=False):
        if not repositories.steps.record_delivery(
                session, run.order_id, run.step, run.token, now, status,
                result.delivered, failures, last_error, dispatched):
            raise outcomes.Superseded(False)
        if run.failures or status == models.STEP_WAITING:
            # After a retry, its row may still be there (cast, not yet
            # deleted by its pass): a waiting delivery keeps none, a retry
            # adds its own. Otherwise there is none to delete.
            repositories.retry_tasks.delete_for_order(
                session, run.order_id, run.step)

    if isinstance(result, Paused):
        # Read again under the URL's lock: enabled since the run read it,
        # the delivery goes on rather than wait for another enable.
        if store.hold_url(session, url_id, now):
            record(models.STEP_PENDING, run.failures, dispatched=True)
            return outcomes.Outcome(
                DELIVERED, 'delivery %s: its URL is available again'
                % run.step, (rpcapi.Step(run.step, run.order_id,
                                         run.token),))
        # The error that made the URL unavailable stays the one shown.
        record(models.STEP_WAITING, run.failures,
               run.last_error or result.reason)
        return outcomes.Outcome(PAUSED, 'delivery %s waits: %s'
                                % (run.step, result.reason))
    if result.sent:
        store.url_succeeded(session, url_id)
    if result.failure is not None:
        failures = (0 if result.sent else run.failures) + 1
        unavailable = (failures >=
                       conf.notifications.max_consecutive_failures)
        store.url_failed(session, url_id, now, result.failure, unavailable)
        if unavailable:
            record(models.STEP_WAITING, failures, result.failure)
            return outcomes.Outcome(PAUSED, (
                'delivery %s failed %d times in a row, its URL is now '
                'unavailable: %s' % (run.step, failures, result.failure)))
        delay = policy_module.backoff_seconds(policy(conf), failures)
        retry_at = now + datetime.timedelta(seconds=delay)
        record(models.STEP_PENDING, failures, result.failure)
        repositories.retry_tasks.add(
            session, run.order_id, run.step, retry_at, args=[run.order_id],
            kwargs={'generation': run.token}, retry_count=failures,
            now=now, priority=run.order_priority)
        return outcomes.Outcome(outcomes.RETRY, (
            'delivery %s: %d sent, then failure %d, again at %s: %s'
            % (run.step, result.sent, failures, retry_at.isoformat(),
               result.failure)))
    if store.last_sequence(session, run.order_id) > result.delivered:
        record(models.STEP_PENDING, 0, dispatched=True)
        return outcomes.Outcome(
            DELIVERED, 'delivery %s: %d sent, through %d; more to send'
            % (run.step, result.sent, result.delivered),
            (rpcapi.Step(run.step, run.order_id, run.token),))
    record(models.STEP_DONE, 0)
    return outcomes.Outcome(DELIVERED, 'delivery %s: %d sent, through %d'
                            % (run.step, result.sent, result.delivered))
