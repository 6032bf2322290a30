"""A delivery as a kind of step: send its order's next events to its
URL, in order, and decide what that run made of it.

A delivery is a step of its order (``notify:<url id>``), claimed and
fenced like any other. What its claim reads and how its run posts the
events are ``worker.steps.posting``'s. Its result is
written under the order's row lock, which every writer of events holds:

- every event acknowledged and none newer: the delivery is DONE, until
  the next event wakes it (``events.record``);
- newer events: it stays PENDING and is cast again at once;
- a request failed: it is retried through the retry scheduler after a
  back-off (``[notifications] retry_*``); after
  ``max_consecutive_failures`` in a row its URL becomes unavailable and
  the delivery WAITING, its events kept;
- its URL is unavailable: WAITING, until ``notification url enable``;
- its URL belongs to another project than its order's (made so after the
  order named it): WAITING, nothing sent, whatever the URL's state;
- its URL's secret cannot be read (``sealing.SealingError``: the
  operator's key file, not the URL): retried after ``retry_max_seconds``,
  no failure counted against the URL or the delivery, an ERROR logged.

Each run leaves a row in its order's history (``writes.RecordRun``):
``done`` when the delivery is DONE, ``retry`` otherwise, with the error
it keeps (a failed request's, or why its URL is unavailable) or none
(more events to send, or its URL available again: it goes on at once).
"""

import dataclasses
import datetime
import typing

from oslo_log import log as logging

from worker.db import models
from worker.notifications import events as events_module
from worker.notifications import sealing
from worker import policy as policy_module
from worker.steps import posting
from worker.steps import runs
from worker.steps import writes
from worker import values

LOG = logging.getLogger(__name__)


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


@dataclasses.dataclass(frozen=True)
class UrlFailed(writes.Single):
    """A request to a delivery's URL failed; ``unavailable``: it is now
    unavailable."""

    url_id: int
    error: str
    unavailable: bool

    def write(self, session: typing.Any, repositories: writes.Repos,
              now: writes.Moment) -> writes.Casts:
        """Execute it."""
        repositories.notifications.url_failed(session, self.url_id, now,
                                              self.error, self.unavailable)
        return ()


class DeliveryKind:
    """A delivery of notifications as a kind of step
    (``worker.steps.kinds``): never gives up, no precheck; its run sends
    events, its result is decided under the order's row lock.

    :param sender: posts one event (``worker.notifications.sender``).
    :param observe_delivery: called with the events a run sent and
        whether a request failed.
    """

    #: Runs no step of a workflow: it needs no order type, has no view.
    runs_workflow = False

    def __init__(self, conf, database, sender, clock, observe_delivery):
        self._conf = conf
        self._database = database
        self._sender = sender
        self._clock = clock
        self._observe_delivery = observe_delivery
        # Read once per process, as a workflow step's policy is.
        self._policy = policy(conf)

    def policy(self, workflow, step):
        """Every delivery's policy, from ``[notifications]``."""
        return self._policy

    def read_pending(self, session, repositories, claimed):
        """``read_pending`` with this worker's options: what the claims of
        deliveries read for their runs."""
        return posting.read_pending(session, repositories, self._conf,
                                    claimed)

    def run(self, run, view):
        """Send the delivery's next events; its view is the ``Pending``
        its claim read, or None."""
        result = posting.send(self._database, self._sender, self._conf,
                              run, self._clock, view)
        if isinstance(result, posting.Sent):
            if result.failure is not None:
                LOG.warning('Delivery %s of order %s: %s', run.step,
                            run.order_id, result.failure)
            self._observe_delivery(result.sent, result.failure is not None)
        elif isinstance(result, posting.KeyMissing):
            LOG.error('Delivery %s of order %s cannot sign its events, '
                      'its URL is not at fault; check %s: %s', run.step,
                      run.order_id, sealing.OPTION, result.reason)
            self._observe_delivery(result.sent, False)
        return result

    def unapplied(self, run, error):
        """What is written for a result of ``run`` that could not be
        applied (it raised ``error``): a failed request that sent
        nothing, which retries the events after those delivered before
        the run, and after enough in a row makes the URL unavailable,
        as an operator sees it (``notification show``)."""
        return posting.Sent(
            delivered=events_module.delivered_sequence(
                run.steps.get(run.step)),
            failure='its result could not be applied (%s)' % error)

    def prepare(self, session, repositories, runs_alone, now):
        """Lock the orders of the deliveries ``runs_alone`` (each the only
        result of its order in the batch) and read their last sequences,
        for all at once: ``{order_id: last sequence}``, which ``decide``
        is given as ``facts``."""
        order_ids = sorted({run.order_id for run in runs_alone})
        store = repositories.notifications
        store.lock_orders(session, order_ids, now)
        last = store.last_sequences(session, order_ids)
        return {order_id: last.get(order_id, 0) for order_id in order_ids}

    def decide(self, session, repositories, run, result, now, facts=None):
        """The ``runs.Decision`` of a delivery's result, decided under
        the order's row lock, which every writer of events holds.

        :param facts: what ``prepare`` read under the lock, or None: the
            lock is taken and the last sequence read here.
        """
        last = (facts or {}).get(run.order_id)
        if last is None:
            store = repositories.notifications
            store.lock_orders(session, [run.order_id], now)
            last = store.last_sequences(session, [run.order_id]).get(
                run.order_id, 0)
        return _Decider(session, repositories, self._conf, run,
                        now).decide(result, last)


class _Decider:
    """The decision of one delivery's result."""

    def __init__(self, session, repositories, conf, run, now):
        self._session = session
        self._store = repositories.notifications
        self._conf = conf
        self._run = run
        self._now = now
        self._url_id = models.url_id_of(run.step)

    def decide(self, result, last):
        """The decision of ``result``; ``last``: the order's last event,
        read under its lock."""
        run = self._run
        if isinstance(result, posting.Paused):
            return self._paused(result)
        url = ()
        if result.sent:
            url = (writes.UrlSucceeded(self._url_id),)
        if isinstance(result, posting.KeyMissing):
            return self._key_missing(result, url)
        if result.failure is not None:
            return self._failed(result, url)
        if last > result.delivered:
            return runs.Decision(
                runs.DELIVERED, 'delivery %s: %d sent, through %d; more to '
                'send' % (run.step, result.sent, result.delivered),
                url + self._record(result, models.STEP_PENDING, 0,
                                   dispatched=True),
                (values.StepRef(run.step, run.order_id, run.token,
                                run.request),))
        return runs.Decision(
            runs.DELIVERED, 'delivery %s: %d sent, through %d'
            % (run.step, result.sent, result.delivered),
            url + self._record(result, models.STEP_DONE, 0))

    def _paused(self, result):
        run = self._run
        # Read again under the URL's lock: enabled since the run read it,
        # the delivery goes on rather than wait for another enable.
        if result.until_enabled and self._store.hold_url(
                self._session, self._url_id, self._now):
            return runs.Decision(
                runs.DELIVERED, 'delivery %s: its URL is available again'
                % run.step,
                self._record(result, models.STEP_PENDING, run.failures,
                             dispatched=True),
                (values.StepRef(run.step, run.order_id, run.token,
                                run.request),))
        # The error that made the URL unavailable stays the one shown.
        return runs.Decision(
            runs.PAUSED, 'delivery %s waits: %s' % (run.step, result.reason),
            self._record(result, models.STEP_WAITING, run.failures,
                         run.last_error or result.reason))

    def _failed(self, result, url):
        run = self._run
        failures = (0 if result.sent else run.failures) + 1
        unavailable = (failures >=
                       self._conf.notifications.max_consecutive_failures)
        url += (UrlFailed(self._url_id, result.failure, unavailable),)
        if unavailable:
            return runs.Decision(
                runs.PAUSED, 'delivery %s failed %d times in a row, its URL '
                'is now unavailable: %s' % (run.step, failures,
                                            result.failure),
                url + self._record(result, models.STEP_WAITING, failures,
                                   result.failure))
        # The run's policy is the deliveries' (DeliveryKind.policy).
        delay = policy_module.backoff_seconds(run.policy, failures)
        retry_at = self._now + datetime.timedelta(seconds=delay)
        return runs.Decision(
            runs.RETRY, 'delivery %s: %d sent, then failure %d, again at '
            '%s: %s' % (run.step, result.sent, failures,
                        retry_at.isoformat(), result.failure),
            url + self._record(result, models.STEP_PENDING, failures,
                               result.failure) +
            (writes.AddRetryRow.of(run, run.step, run.token, retry_at,
                                   failures),))

    def _key_missing(self, result, url):
        """Retried at the back-off's ceiling, without a failure: the key
        file, once fixed, is read again by the next run."""
        run = self._run
        failures = 0 if result.sent else run.failures
        retry_at = self._now + datetime.timedelta(
            seconds=self._conf.notifications.retry_max_seconds)
        return runs.Decision(
            runs.RETRY, 'delivery %s: %d sent, then its URL\'s secret could '
            'not be read, again at %s: %s' % (
                run.step, result.sent, retry_at.isoformat(), result.reason),
            url + self._record(result, models.STEP_PENDING, failures,
                               result.reason) +
            (writes.AddRetryRow.of(run, run.step, run.token, retry_at,
                                   failures),))

    def _record(self, result, status, failures, last_error=None,
                dispatched=False):
        """The writes of the run's new state: the fenced write of its row,
        the delete of a retry row it may have left, and the run's row in
        its order's history: ``done`` if the delivery is DONE, else
        ``retry`` with the error it keeps (none when it goes on at once).
        """
        run = self._run
        recorded = (writes.RecordDelivery(
            run.order_id, run.step, run.token, status, result.delivered,
            failures, last_error, dispatched),)
        if run.failures or status == models.STEP_WAITING:
            # After a retry, its row may still be there (cast, not yet
            # deleted by its pass): a waiting delivery keeps none, a retry
            # adds its own. Otherwise there is none to delete.
            recorded += (writes.DeleteRetryRows(run.order_id, run.step),)
        return recorded + (writes.RecordRun.of(
            run, models.RUN_DONE if status == models.STEP_DONE
            else models.RUN_RETRY, last_error),)
