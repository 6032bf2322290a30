"""A step that crashed runs alone in its process.

A poison step (one that kills the process running it: a crash in a
library, memory without bound) takes down every step its process held,
and each of them counts a crash (``order_steps.crashes``) as it does: an
innocent step that shares a process with a poison step a few times in a
row fails as poison itself. The retry daemon's spread of crashed steps
(``scheduler.recovery``) keeps most crashed steps from arriving together,
not all: in a small pool that poison steps kill every few seconds, an
innocent step that crashed reached the process of a poison step again
and again, claimed with it or just before it, and failed as poison.

So a step that crashed before runs its next run alone: once claimed, it
waits until every other step this process claimed has ended, and no
other step claims meanwhile (they wait before their claim, so a death
takes them unclaimed: the retry daemon dispatches them again, with no
crash counted). If it kills the process again, it dies alone.

One at a time: a process claims no second step that crashed while one is
claimed here and has not run (``busy``): the claim refuses it, and it is
cast again after ``report_interval`` (``worker.steps.claim``), to this
process or another. Two suspects claimed together would wait for each
other, or one die beside the other.

The wait is bounded by half the step's lease: a run of a neighbour that
hangs must not cost the suspect its lease. Past it, the suspect runs
beside the steps still running (and says so in the log).
"""

import contextlib
import threading
import time

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class Isolation:
    """Counts the steps of this process that are claimed or claiming, and
    lets a step that crashed before run with none of them.

    Every step thread holds one count from before its claim to the end of
    its run and of the continuations it runs (``held``); a continuation
    handed to a thread of its own was claimed by its hander's apply, and
    is counted from there (``add``) until it ends (``leave``).
    """

    def __init__(self, max_crashes, recheck_seconds):
        self._max_crashes = max_crashes
        #: How long after a claim refused it a suspect is cast again.
        self.recheck_seconds = recheck_seconds
        self._changed = threading.Condition()
        # Steps claimed or claiming, but not the suspect's own.
        self._others = 0
        # A suspect waits for the others, or runs.
        self._alone = False
        # The suspect claimed here that has not run yet: (order, step,
        # token), and until when (its lease) it holds the place.
        self._reserved = None
        self._reserved_until = 0.0

    def suspect(self, step):
        """Whether ``step`` (a run, or a step's row) is of a step whose
        process died running it: not one that fails for it without
        running (``max_step_crashes``)."""
        return 0 < step.crashes < self._max_crashes

    def busy(self):
        """Whether a suspect is claimed here and has not run: no other
        may be claimed meanwhile."""
        with self._changed:
            return (self._reserved is not None and
                    time.monotonic() < self._reserved_until)

    def reserve(self, run):
        """``run``, a suspect, was claimed here (its claim committed).

        The place is held until its run ends, or its lease would have
        (a run that never came to ``alone``, should it happen).
        """
        with self._changed:
            self._reserved = _key(run)
            self._reserved_until = (time.monotonic() +
                                    run.policy.timeout_seconds)

    @contextlib.contextmanager
    def held(self):
        """Hold a count while claiming and running a step; wait first for
        a suspect that runs alone."""
        with self._changed:
            self._changed.wait_for(lambda: not self._alone)
            self._others += 1
        try:
            yield
        finally:
            self.leave()

    def add(self):
        """Count a step that is claimed already (a continuation handed to
        a thread of its own): it runs even beside a waiting suspect."""
        with self._changed:
            self._others += 1

    def leave(self):
        """A step counted by ``held`` or ``add`` ended."""
        with self._changed:
            self._others -= 1
            # Only a suspect waits for a count to fall (the others wait for
            # its end): no wake-up on the hot path otherwise.
            if self._alone:
                self._changed.notify_all()

    def around(self, run):
        """Where ``run`` runs: alone (``alone``, at most half its lease
        waiting) if it is a suspect, as any step otherwise."""
        if not self.suspect(run):
            return contextlib.nullcontext()
        return self.alone(run, run.policy.timeout_seconds / 2)

    @contextlib.contextmanager
    def alone(self, run, wait_seconds):
        """Run ``run``, a suspect, with no other step of this process:
        wait for one suspect at a time, then for every other step to end,
        at most ``wait_seconds``. The caller holds a count."""
        with self._changed:
            # Its own count goes first: two suspects claimed together must
            # not wait for each other.
            self._others -= 1
            self._changed.notify_all()
            self._changed.wait_for(lambda: not self._alone)
            self._alone = True
            LOG.info('Step %s of order %s: its process died %d time(s) '
                     'running it; it runs alone in this one',
                     run.step, run.order_id, run.crashes)
            if not self._changed.wait_for(lambda: not self._others,
                                          timeout=wait_seconds):
                LOG.warning('Step %s of order %s runs beside %d other '
                            'step(s) still running after %gs',
                            run.step, run.order_id, self._others,
                            wait_seconds)
        try:
            yield
        finally:
            with self._changed:
                self._alone = False
                if self._reserved == _key(run):
                    self._reserved = None
                self._others += 1
                self._changed.notify_all()


def _key(run):
    return run.order_id, run.step, run.token
