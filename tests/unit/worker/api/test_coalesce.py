"""Casts of concurrent callers share messages (``worker.api.coalesce``)."""

import threading

from worker.api import coalesce
from worker import values


class _Held:
    """A ``WorkerAPI`` whose first message waits until released; it
    records each message's steps and context, and fails those naming a
    step of ``failing``."""

    def __init__(self, failing=()):
        self.messages = []
        self.release = threading.Event()
        self._failing = failing

    def run_steps(self, steps, context=None):
        if not self.messages:
            self.messages.append((list(steps), context))
            assert self.release.wait(10)
            return
        self.messages.append((list(steps), context))
        if any(step.order_id in self._failing for step in steps):
            raise RuntimeError('broker refused')


def _steps(order_id, count=1):
    return [values.StepRef('first', order_id, index) for index in range(count)]


def _cast_meanwhile(casts, held, calls):
    """Call ``casts.run_steps`` for each of ``calls`` (``(steps,
    context)``) while the first message is held; their errors."""
    errors = {}

    def call(steps, context):
        try:
            casts.run_steps(steps, context=context)
        except RuntimeError as exc:
            errors[steps[0].order_id] = exc

    first = threading.Thread(target=call, args=(_steps('a'), 'ctx-a'))
    first.start()
    while not held.messages:
        threading.Event().wait(0.01)
    others = []
    for number, item in enumerate(calls, 1):
        others.append(threading.Thread(target=call, args=item))
        others[-1].start()
        # It waits for the writer, queued behind the ones before.
        while len(casts._send._waiting) < number:
            threading.Event().wait(0.01)
    held.release.set()
    for thread in [first] + others:
        thread.join(10)
    return errors


def test_casts_asked_meanwhile_go_together_in_full_messages():
    held = _Held()
    casts = coalesce.CoalescedCasts(held, rows_per_cast=3)

    errors = _cast_meanwhile(casts, held, [
        (_steps('b', 2), 'ctx-b'), (_steps('c', 2), 'ctx-c')])

    assert errors == {}
    # Alone, with its own context; then the four others in messages of
    # up to three steps, with no sender's context.
    assert [([step.order_id for step in steps], context)
            for steps, context in held.messages] == [
        (['a'], 'ctx-a'), (['b', 'b', 'c'], None), (['c'], None)]


def test_a_failed_message_fails_only_the_callers_it_carried():
    held = _Held(failing={'c'})
    casts = coalesce.CoalescedCasts(held, rows_per_cast=2)

    errors = _cast_meanwhile(casts, held, [
        (_steps('b', 2), None), (_steps('c', 1), None)])

    assert set(errors) == {'c'}
