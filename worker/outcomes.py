"""What a step's result does to the step, its order and the steps after it.

``write`` writes one result inside an apply transaction, which may
write several. Every write is conditional on the step's token; a step
that runs beside others locks its order first (``orders.lock_live``), so
that the results of parallel steps of one order are written one after
the other. It returns a named ``Outcome``;
the steps it made ready are cast by the caller after the commit. A result
whose step or order moved on raises ``Superseded``, which tells whether
the caller must roll back what it wrote.
"""

import dataclasses
import datetime
import typing

from worker.db import models
from worker.notifications import events
from worker.plugins import base
from worker import policy as policy_module
from worker import rpcapi

#: Outcome kinds, also the worker's metric labels.
DONE = 'done'
ACTIVE = 'active'
ERROR = 'error'
RETRY = 'retry'
CANCELLED = 'cancelled'
#: Not outcomes of a run but results the worker counts too: a message
#: dropped because its token is no longer current, and a result discarded
#: because its step moved on while it ran.
STALE = 'stale'
SUPERSEDED = 'superseded'


@dataclasses.dataclass(frozen=True)
class StepError:
    """A run that raised: the exception, as the policy matches it."""

    description: str
    #: Qualified and short names of the exception's class and its bases.
    class_names: tuple[str, ...]

    @classmethod
    def of(cls, exc):
        """The ``StepError`` of an exception."""
        names = []
        for klass in type(exc).__mro__:
            if klass is object:
                continue
            names.extend([klass.__name__,
                          '%s.%s' % (klass.__module__, klass.__qualname__)])
        return cls('%s: %s' % (type(exc).__name__, exc), tuple(names))


@dataclasses.dataclass(frozen=True)
class Run:
    """The facts of one claimed run that its result is written against."""

    order_id: str
    step: str
    #: The token the run holds.
    token: int
    #: The step's failures in a row and polls before this run.
    failures: int
    polls: int
    started_at: datetime.datetime | None
    last_error: str | None
    order_created_at: datetime.datetime | None
    #: The order's metadata as read at the claim; it changes only when
    #: the order completes.
    order_meta: typing.Mapping[str, typing.Any] | None
    #: The order's priority, which the step's retry rows get.
    order_priority: int
    #: The order type's ``worker.order_types.base.Workflow``; None for a
    #: delivery of an order whose type is not installed here.
    workflow: typing.Any
    policy: policy_module.StepPolicy
    #: ``{name: OrderStep}`` of the order as read when the run was
    #: claimed.
    steps: typing.Mapping[str, typing.Any] = dataclasses.field(
        default_factory=dict)
    #: The order has deliveries (``worker.notifications``): its changes
    #: are events.
    subscribed: bool = False
    #: Each step that ends is an event too (``step_events``).
    step_events: bool = False
    #: When this run was claimed; its lease ends ``policy.timeout_seconds``
    #: later.
    claimed_at: datetime.datetime | None = None

    @property
    def delivery(self):
        """True if the step is a delivery of notifications."""
        return models.url_id_of(self.step) is not None

    @property
    def compensating(self):
        """True if the step is its order type's compensation step."""
        compensation = self.workflow.compensation if self.workflow else None
        return compensation is not None and self.step == compensation.name


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What writing one result did.

    :param kind: ``done``, ``active``, ``error``, ``retry`` or
        ``cancelled``.
    :param description: one line for the log.
    :param casts: steps made ready now, to cast after the commit.
    """

    kind: str
    description: str
    casts: tuple[rpcapi.Step, ...] = ()


@dataclasses.dataclass(frozen=True)
class _Finished:
    """A step this result just finished, as the rest of ``_done`` reads it.
    """

    status: str
    generation: int
    output: dict


class Superseded(Exception):
    """The run's token or its order moved on.

    ``wrote``: a write of this result had already succeeded, so the
    transaction must be rolled back to undo it; otherwise nothing of this
    result was written, and the transaction may go on with other results.
    """

    def __init__(self, wrote):
        super().__init__('superseded after a write' if wrote else
                         'superseded')
        self.wrote = wrote


def write(session, repositories, run, result, now):
    """Write ``result`` of ``run``; return its ``Outcome``.

    :raises Superseded: the step or its order moved on; the caller rolls
        the transaction back.
    """
    return _Writer(session, repositories, run, now).write(result)


class _Writer:
    """The writes of one result, each conditional on the run's token."""

    def __init__(self, session, repositories, run, now):
        self._session = session
        self._orders = repositories.orders
        self._steps = repositories.steps
        self._retry_tasks = repositories.retry_tasks
        self._repositories = repositories
        self._run = run
        self._now = now
        self._wrote = False
        # Deliveries woken by this result's events, to cast with its steps.
        self._woken = []

    def write(self, result):
        outcome = self._write(result)
        if self._woken:
            outcome = dataclasses.replace(
                outcome, casts=outcome.casts + tuple(self._woken))
        return outcome

    def _notify(self, step_status=None, order_status=None, reason=None,
                error=None):
        """Record the events of this result, if the order has deliveries.

        The order's row is held: changed by this transaction, or locked
        (``orders.lock_live``, in ``_done``).

        :param step_status: the run's step ended so (an event if its type
            asks for step events).
        :param order_status: the order moved to this status.
        """
        run = self._run
        if not run.subscribed:
            return
        found = []
        if step_status is not None and run.step_events:
            found.append(events.step_ended(
                run.step, step_status, order_status or models.PENDING,
                error))
        if order_status is not None:
            found.extend(events.status_changed(order_status, reason))
        self._woken.extend(events.record(self._session, self._repositories,
                                         run.order_id, found, self._now))

    def _write(self, result):
        run = self._run
        compensating = run.compensating
        if isinstance(result, base.Completed):
            return self._done(result, compensating)
        if isinstance(result, base.RemoteUnavailable):
            return self._failed_run(
                'remote service unavailable: %s' % result.reason,
                result.retry_after_seconds, compensating)
        if isinstance(result, StepError):
            if policy_module.retries(run.policy, result.class_names):
                return self._failed_run(result.description, None,
                                        compensating)
            return self._give_up(result.description, compensating)
        if isinstance(result, base.RetryLater):
            if result.method not in (None, run.step):
                # A workflow moves on by completing steps; a jump to
                # another step would bypass the declared order.
                return self._give_up(
                    'asked to retry as step %r; a step may only poll '
                    'itself' % result.method, compensating)
            return self._poll(result.delay_seconds, compensating)
        if isinstance(result, base.Failed):
            return self._give_up(result.reason, compensating)
        if isinstance(result, policy_module.GiveUp):
            return self._give_up(result.reason, compensating, as_given=True)
        return self._give_up('step returned %r' % (result,), compensating)

    def _done(self, result, compensating):
        run = self._run
        workflow = run.workflow
        alone = compensating or workflow.in_sequence(run.step)
        if not alone or (run.subscribed and run.step_events):
            # Parallel steps of one order lock it first, so that their
            # results are written one after the other and exactly one of
            # them sees every step DONE. Every other result touches the
            # order only through a conditional move, save one that
            # records a step event: events are numbered under the lock.
            self._check(self._orders.lock_live(self._session, run.order_id,
                                               self._now))
        output = dict(result.meta or {})
        self._check(self._steps.finish(
            self._session, run.order_id, run.step, run.token, self._now,
            models.STEP_DONE, output=output))
        # A row the scheduler cast and has not deleted yet must not cast
        # a finished step again.
        self._retry_tasks.delete_for_order(self._session, run.order_id,
                                           run.step)
        if compensating:
            self._check(self._orders.end_cancel(self._session, run.order_id,
                                                self._now))
            self._notify(models.STEP_DONE, models.CANCELLED)
            return Outcome(CANCELLED, 'compensation %s done, CANCELLED'
                           % run.step)
        if alone:
            # No other step ran since this one was claimed: the steps as
            # read then are the steps now, save this one.
            steps = dict(run.steps)
            steps[run.step] = _Finished(models.STEP_DONE, 0, output)
        else:
            steps = self._steps.for_order(self._session, run.order_id)
        done = {name for name, step in steps.items()
                if step.status == models.STEP_DONE}
        if set(workflow.names) <= done:
            meta = dict(run.order_meta or {})
            for name in workflow.names:
                meta.update(steps[name].output or {})
            self._check(self._orders.complete(self._session, run.order_id,
                                              self._now, meta))
            self._notify(models.STEP_DONE, models.ACTIVE)
            return Outcome(ACTIVE, 'step %s done, ACTIVE' % run.step)
        self._notify(models.STEP_DONE)
        started = {name for name, step in steps.items()
                   if step.status != models.STEP_WAITING}
        ready = workflow.ready(done, started)
        delay = float(result.then_after_seconds or 0)
        self._steps.start(self._session, run.order_id, ready, self._now,
                          dispatched=delay <= 0)
        if delay > 0:
            retry_at = self._now + datetime.timedelta(seconds=delay)
            for name in ready:
                self._add_retry(name, steps[name].generation, retry_at, 0,
                                replace=False)
            return Outcome(DONE, 'step %s done; %s start at %s'
                           % (run.step, ', '.join(ready) or 'nothing',
                              retry_at.isoformat()))
        casts = tuple(rpcapi.Step(name, run.order_id, steps[name].generation)
                      for name in ready)
        return Outcome(DONE, 'step %s done; %s start now'
                       % (run.step, ', '.join(ready) or 'nothing'), casts)

    def _failed_run(self, what, asked_delay, compensating):
        run = self._run
        failures = run.failures + 1
        decision = policy_module.after_failure(
            run.policy, failures, run.started_at, self._now, what,
            asked_delay)
        if isinstance(decision, policy_module.GiveUp):
            return self._give_up(decision.reason, compensating,
                                 as_given=True)
        return self._retry(decision.delay_seconds, failures, run.polls,
                           what, 'retry %d after %s' % (failures, what))

    def _poll(self, delay, compensating):
        run = self._run
        polls = run.polls + 1
        decision = policy_module.after_poll(run.policy, polls,
                                            run.started_at, self._now,
                                            float(delay))
        if isinstance(decision, policy_module.GiveUp):
            return self._give_up(decision.reason, compensating,
                                 as_given=True)
        return self._retry(decision.delay_seconds, 0, polls, None,
                           'poll %d' % polls)

    def _retry(self, delay, failures, polls, last_error, what):
        run = self._run
        self._check(self._steps.retry(
            self._session, run.order_id, run.step, run.token, self._now,
            failures=failures, polls=polls, last_error=last_error))
        retry_at = self._now + datetime.timedelta(seconds=delay)
        self._add_retry(run.step, run.token, retry_at, failures)
        return Outcome(RETRY, 'step %s scheduled at %s (%s)'
                       % (run.step, retry_at.isoformat(), what))

    def _give_up(self, what, compensating, as_given=False):
        run = self._run
        reason = 'step %s %s' % (run.step, what if as_given else
                                 'failed after %d attempt(s): %s'
                                 % (run.failures + 1, what))
        self._check(self._steps.finish(
            self._session, run.order_id, run.step, run.token, self._now,
            models.STEP_FAILED, last_error=what))
        if compensating:
            self._check(self._orders.end_cancel(
                self._session, run.order_id, self._now,
                failure='compensation %s' % reason))
            self._notify(models.STEP_FAILED, models.CANCELLED,
                         reason='compensation %s' % reason, error=what)
            return Outcome(CANCELLED, 'CANCELLED; compensation %s' % reason)
        self._check(self._orders.fail(self._session, run.order_id,
                                      self._now, reason))
        self._notify(models.STEP_FAILED, models.ERROR, reason=reason,
                     error=what)
        # The order is over: the steps still running elsewhere lose their
        # claims, the ones waiting never start.
        self._steps.revoke_open(self._session, run.order_id, self._now,
                                'order failed at step %s' % run.step)
        self._retry_tasks.delete_for_order(self._session, run.order_id)
        return Outcome(ERROR, 'ERROR: %s' % reason)

    def _add_retry(self, step, generation, retry_at, failures,
                   replace=True):
        """Add the step's retry row; ``replace`` a row it may still have
        (one the scheduler cast and has not deleted yet)."""
        run = self._run
        if replace:
            self._retry_tasks.delete_for_order(self._session, run.order_id,
                                               step)
        self._retry_tasks.add(self._session, run.order_id, step, retry_at,
                              args=[run.order_id],
                              kwargs={'generation': generation},
                              retry_count=failures, now=self._now,
                              priority=run.order_priority)

    def _check(self, written):
        if not written:
            raise Superseded(self._wrote)
        self._wrote = True
