"""The spans of a step's life on a worker (``worker.tracing``).

Each step that a worker takes is a span ``step <name>`` in its order's
trace, with three children: ``claim`` (from its arrival to its claim
written), ``run`` (the order type's call, or a delivery's requests, whose
webhook POSTs are its children) and ``result`` (until its result is
written). The claim and the result are written in batches
(``worker.common.group_commit``); their spans are timed in the step's own
thread around its wait for its batch, so they cost no database round
trip.

The parent of ``step`` is the span of the cast that brought it (the
message's context, per order), or, for a step of a sender that carries
none, the span of its order's creation as its row keeps it
(``orders.trace_context``, read by the claim with the order). The claim
span is recorded once the claim answered, with the time of the step's
arrival: only then is the order's trace known.

Only used with tracing on: the worker checks ``tracing.ENABLED`` before
it builds a ``StepTrace``.
"""

import dataclasses

from worker import tracing


class StepTrace:
    """The spans of one step (``values.StepRef``) in a step thread."""

    __slots__ = ('_step', '_arrived', '_span')

    def __init__(self, step):
        self._step = step
        self._arrived = tracing.now_ns()
        self._span = tracing.NO_SPAN

    def _attributes(self):
        return {'barbican_retry.order_id': self._step.order_id,
                'barbican_retry.step': self._step.step,
                'barbican_retry.generation': self._step.generation}

    def claimed(self, run):
        """Record the step's span and its claim's, now that the claim
        answered; ``run`` with its ``trace``: the step span's carrier,
        which the casts its result makes ready join."""
        self._span = tracing.start(
            'step %s' % self._step.step, self._step.trace or run.trace,
            self._arrived, self._attributes())
        self._span.set('barbican_retry.token', run.token)
        self._phase('claim', self._arrived).end()
        carrier = self._span.carrier
        return dataclasses.replace(run, trace=carrier) if carrier else run

    def not_claimed(self):
        """A step that claimed nothing (stale, waiting or failed): its
        span alone, if its cast carried a trace."""
        self._span = tracing.start(
            'step %s' % self._step.step, self._step.trace, self._arrived,
            self._attributes())
        self._span.set('barbican_retry.claimed', False)
        self._span.end()

    def run(self, call, run, view):
        """``call(run, view)`` inside the ``run`` span, current for it."""
        span = self._phase('run')
        try:
            with span.current():
                return call(run, view)
        except Exception as exc:
            span.fail(str(exc))
            raise
        finally:
            span.end()

    def result(self, apply, item):
        """``apply(item)`` (the wait for the result's batch) inside the
        ``result`` span."""
        span = self._phase('result')
        try:
            return apply(item)
        except Exception as exc:
            span.fail(str(exc))
            raise
        finally:
            span.end()

    def end(self, outcome=None):
        """End the step's span; ``outcome`` (its result's, or why it
        failed) as an attribute."""
        self._span.set('barbican_retry.outcome', outcome)
        self._span.end()

    def _phase(self, name, start_ns=None):
        return tracing.start(name, self._span.carrier, start_ns)


def join(steps, items):
    """``steps`` (cast after a batch of results) with the ``trace`` of
    the run of their order among ``items`` (``[(run, result), ...]``)
    when they have none: a step a result made ready is cast as a child of
    the step that made it so."""
    of_order = {run.order_id: run.trace for run, _ in items
                if run.trace is not None}
    return [step._replace(trace=of_order[step.order_id])
            if step.trace is None and step.order_id in of_order else step
            for step in steps]
