"""What a workflow step's result does to the step, its order and the steps
after it: decided as writes (``worker.steps.writes``), written by the
caller.

``decide`` is pure. It reads nothing but the run (the facts of its claim)
and, for a step that ends beside others, the order's steps as read under
the order's lock: ``needs_order`` tells the caller when to take that lock
and read them first (``orders.lock_live``, ``steps.for_order``), so that
the results of parallel steps of one order are decided one after the
other and exactly one of them sees every step DONE. Every write is
conditional on the run's token or on the order's status, but the last:
the run's row in its order's history (``writes.RecordRun``: ``done``,
``retry`` or ``failed``), written only with the others. The steps made
ready are cast by the caller after the commit.
"""

import collections.abc as abc
import dataclasses
import datetime
import typing

from worker.db import models
from worker.notifications import events
from worker.order_types import base as types_base
from worker.plugins import base as step_results
from worker import policy as policy_module
from worker.steps import runs
from worker.steps import writes
from worker import values


@dataclasses.dataclass(frozen=True)
class _Finished:
    """A step this result just finished, as the rest of ``_done`` reads it.
    """

    status: str
    generation: int
    output: dict[str, typing.Any]


def needs_order(run: runs.Run, result: runs.Outcome) -> bool:
    """True if ``result`` is decided under the order's lock, with its
    steps as read then (``decide``'s ``steps``).

    Parallel steps of one order take it, so that their results are
    written one after the other and exactly one of them sees every step
    DONE; so does a step that records a step event without changing the
    order (events are numbered under the lock). Every other result
    touches the order only through a conditional move.
    """
    if not isinstance(result, step_results.Completed):
        return False
    alone = run.compensating or _workflow(run).in_sequence(run.step)
    return not alone or (run.subscribed and run.step_events)


def _workflow(run: runs.Run) -> types_base.Workflow:
    """The run's workflow: a workflow step's run always has one."""
    if run.workflow is None:
        raise TypeError('step %s of order %s has no order type'
                        % (run.step, run.order_id))
    return run.workflow


def decide(run: runs.Run, result: runs.Outcome, now: datetime.datetime,
           steps: abc.Mapping[str, typing.Any] | None = None
           ) -> runs.Decision:
    """The ``runs.Decision`` of ``result`` of ``run`` at ``now``.

    :param steps: ``{name: step}`` of the order read under its lock, when
        ``needs_order``; else the steps as read at the claim hold.
    """
    return _Decider(run, now, steps).decide(result)


class _Decider:
    """The decision of one result."""

    def __init__(self, run: runs.Run, now: datetime.datetime,
                 steps: abc.Mapping[str, typing.Any] | None) -> None:
        self._run = run
        self._now = now
        self._steps = steps

    def decide(self, result: runs.Outcome) -> runs.Decision:
        run = self._run
        if isinstance(result, step_results.Completed):
            return self._done(result)
        if isinstance(result, step_results.RemoteUnavailable):
            return self._failed_run(
                'remote service unavailable: %s' % result.reason,
                result.retry_after_seconds)
        if isinstance(result, runs.StepError):
            if policy_module.retries(run.policy, result.class_names):
                return self._failed_run(result.description, None)
            return self._give_up(result.description)
        if isinstance(result, step_results.WaitForSignal):
            if result.name not in self._declared():
                return self._give_up(
                    'waits for signal %r, which it does not declare '
                    '(Step signals)' % result.name)
            return self._poll(result.timeout_seconds)
        if isinstance(result, step_results.RetryLater):
            if result.method not in (None, run.step):
                # A workflow moves on by completing steps; a jump to
                # another step would bypass the declared order.
                return self._give_up(
                    'asked to retry as step %r; a step may only poll '
                    'itself' % result.method)
            return self._poll(result.delay_seconds)
        if isinstance(result, step_results.Failed):
            return self._give_up(result.reason)
        if isinstance(result, policy_module.GiveUp):
            return self._give_up(result.reason, as_given=True)
        return self._give_up('step returned %r' % (result,))

    def _events(self, step_status: str | None = None,
                order_status: str | None = None, reason: str | None = None,
                error: str | None = None) -> tuple[writes.RecordEvents, ...]:
        """The ``RecordEvents`` of this result, if the order has
        deliveries and the result makes events: none, or one.

        :param step_status: the run's step ended so (an event if its type
            asks for step events).
        :param order_status: the order moved to this status.
        """
        run = self._run
        if not run.subscribed:
            return ()
        found = []
        if step_status is not None and run.step_events:
            found.append(events.step_ended(
                run.step, step_status, order_status or models.PENDING,
                error))
        if order_status is not None:
            found.extend(events.status_changed(order_status, reason))
        if not found:
            return ()
        return (writes.RecordEvents(run.order_id, tuple(found),
                                    run.request),)

    def _done(self, result: step_results.Completed) -> runs.Decision:
        run = self._run
        workflow = _workflow(run)
        output = dict(result.meta or {})
        # A row the scheduler cast and has not deleted yet must not cast
        # a finished step again.
        finished: tuple[typing.Any, ...] = (
            writes.FinishStep.done(run, output),
            writes.DeleteRetryRows(run.order_id, run.step))
        if run.signals:
            finished += (writes.ConsumeSignals(run.order_id, run.step,
                                               run.signals),)
        recorded = (writes.RecordRun.of(run, models.RUN_DONE),)
        if run.compensating:
            return runs.Decision(
                runs.CANCELLED, 'compensation %s done, CANCELLED' % run.step,
                finished + (writes.EndCancel(run.order_id),) +
                self._events(models.STEP_DONE, models.CANCELLED) + recorded)
        # Alone, no other step ran since this one was claimed: the steps
        # as read then are the steps now, save this one.
        steps = dict(self._steps if self._steps is not None else run.steps)
        steps[run.step] = _Finished(models.STEP_DONE, 0, output)
        done = {name for name, step in steps.items()
                if step.status == models.STEP_DONE}
        if set(workflow.names) <= done:
            meta = dict(run.order_meta or {})
            for name in workflow.names:
                meta.update(steps[name].output or {})
            return runs.Decision(
                runs.ACTIVE, 'step %s done, ACTIVE' % run.step,
                finished + (writes.CompleteOrder(run.order_id, meta),) +
                self._events(models.STEP_DONE, models.ACTIVE) + recorded)
        return self._start_ready(
            steps, done, float(result.then_after_seconds or 0),
            finished + self._events(models.STEP_DONE), recorded)

    def _start_ready(self, steps: dict[str, typing.Any], done: set[str],
                     delay: float, finished: tuple[typing.Any, ...],
                     recorded: tuple[typing.Any, ...]) -> runs.Decision:
        """The decision of a step done, its order not: start the steps it
        made ready (``steps`` as they are now, ``done`` those done), now
        or after ``delay`` seconds (through retry rows)."""
        run = self._run
        workflow = _workflow(run)
        started = {name for name, step in steps.items()
                   if step.status != models.STEP_WAITING}
        ready = tuple(workflow.ready(done, started))
        finished += (writes.StartSteps(run.order_id, ready, delay <= 0),)
        if delay > 0:
            retry_at = self._now + datetime.timedelta(seconds=delay)
            return runs.Decision(
                runs.DONE, 'step %s done; %s start at %s'
                % (run.step, ', '.join(ready) or 'nothing',
                   retry_at.isoformat()),
                finished + tuple(
                    writes.AddRetryRow.of(run, name, steps[name].generation,
                                          retry_at, 0)
                    for name in ready) + recorded)
        return runs.Decision(
            runs.DONE, 'step %s done; %s start now'
            % (run.step, ', '.join(ready) or 'nothing'), finished + recorded,
            tuple(values.StepRef(name, run.order_id, steps[name].generation,
                                 run.request, workflow.type_name)
                  for name in ready))

    def _failed_run(self, what: str,
                    asked_delay: float | None) -> runs.Decision:
        run = self._run
        failures = run.failures + 1
        decision = policy_module.after_failure(
            run.policy, failures, run.started_at, self._now, what,
            asked_delay)
        if isinstance(decision, policy_module.GiveUp):
            return self._give_up(decision.reason, as_given=True)
        return self._retry(decision.delay_seconds, failures, run.polls,
                           what, 'retry %d after %s' % (failures, what))

    def _poll(self, delay: float) -> runs.Decision:
        run = self._run
        polls = run.polls + 1
        decision = policy_module.after_poll(run.policy, polls,
                                            run.started_at, self._now,
                                            float(delay))
        if isinstance(decision, policy_module.GiveUp):
            return self._give_up(decision.reason, as_given=True)
        retry = self._retry(decision.delay_seconds, 0, polls, None,
                            'poll %d' % polls)
        names = self._declared()
        if not names:
            return retry
        # A signal sent while it ran found it claimed: this wakes it.
        return dataclasses.replace(retry, writes=retry.writes + (
            writes.WakeOnSignals(
                run.order_id, run.step, run.token, names,
                max(run.signals, default=0), run.request,
                _workflow(run).type_name),))

    def _declared(self) -> tuple[str, ...]:
        """The signals the run's step declares (``Step.signals``)."""
        workflow = self._run.workflow
        if workflow is None or not workflow.has_step(self._run.step):
            return ()
        return tuple(workflow.step(self._run.step).signals)

    def _retry(self, delay: float, failures: int, polls: int,
               last_error: str | None, what: str) -> runs.Decision:
        run = self._run
        retry_at = self._now + datetime.timedelta(seconds=delay)
        # The step's row replaces one it may still have (cast by the
        # scheduler and not deleted yet).
        return runs.Decision(
            runs.RETRY, 'step %s scheduled at %s (%s)'
            % (run.step, retry_at.isoformat(), what),
            (writes.RetryStep.of(run, failures, polls, last_error),
             writes.DeleteRetryRows(run.order_id, run.step),
             writes.AddRetryRow.of(run, run.step, run.token, retry_at,
                                   failures),
             writes.RecordRun.of(run, models.RUN_RETRY, last_error)))

    def _give_up(self, what: str, as_given: bool = False) -> runs.Decision:
        run = self._run
        reason = 'step %s %s' % (run.step, what if as_given else
                                 'failed after %d attempt(s): %s'
                                 % (run.failures + 1, what))
        failed = writes.FinishStep.failed(run, what)
        recorded = writes.RecordRun.of(run, models.RUN_FAILED, what)
        if run.compensating:
            failure = 'compensation %s' % reason
            return runs.Decision(
                runs.CANCELLED, 'CANCELLED; compensation %s' % reason,
                (failed, writes.EndCancel(run.order_id, failure)) +
                self._events(models.STEP_FAILED, models.CANCELLED,
                             reason=failure, error=what) + (recorded,))
        # The order is over: the steps still running elsewhere lose their
        # claims, the ones waiting never start.
        return runs.Decision(
            runs.ERROR, 'ERROR: %s' % reason,
            (failed, writes.FailOrder(run.order_id, reason)) +
            self._events(models.STEP_FAILED, models.ERROR, reason=reason,
                         error=what) +
            (writes.RevokeOpen(run.order_id,
                               'order failed at step %s' % run.step),
             writes.DeleteRetryRows(run.order_id), recorded))
