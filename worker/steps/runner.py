"""A step's life in its step thread: claim, run, apply, and the steps
its apply handed over to run here.

The worker's RPC endpoint (``worker.manager``) hands each step of a
message to a step thread, where ``StepRunner.run_step`` lives its three
moves (claim, run, apply; see ``worker.manager``). An apply may hand
over steps it made ready and claimed in its own transaction
(``worker.steps.continuation``): the thread goes on with one of them, and
each other runs on the step thread reserved for it; once the service
stops, they are given back instead.
"""

from oslo_log import log as logging

from worker import context
from worker.steps import traces
from worker import tracing

LOG = logging.getLogger(__name__)


class StepRunner:
    """Claims, runs and applies steps in the step threads.

    :param steps: the executor of the step threads.
    :param free_threads: a semaphore held by each step handed to a step
        thread, released when it ends.
    :param isolation: the ``worker.steps.isolation.Isolation`` of this
        process's steps.
    :param claimer: the ``worker.steps.claim.Claimer`` (to give back).
    :param applier: the ``worker.steps.apply.Applier`` (to keep and cast).
    :param claim: claims one step with the others being claimed
        (``GroupCommit`` of ``claimer.claim_batch``).
    :param apply: applies one result with the others being applied
        (``GroupCommit`` of ``applier.apply_batch``).
    """

    def __init__(self, steps, free_threads, isolation, claimer, applier,
                 claim, apply):
        self._steps = steps
        self._free_threads = free_threads
        self._isolation = isolation
        self._claimer = claimer
        self._applier = applier
        self._claim = claim
        self._apply = apply
        # Set once the service stops: a step claimed here and not started
        # is given back (_give_back), never left claimed.
        self._stopping = False

    def stop(self):
        """Start no continuation from now on: give them back."""
        self._stopping = True

    def run_step(self, step, ctxt):
        """Claim, run and apply one step (in a step thread), with its
        order's context as the thread's."""
        with context.current(context.for_ids(step.request) or ctxt), \
                self._isolation.held():
            self._claim_run_apply(step)

    def _claim_run_apply(self, step):
        # With tracing off, the flag is all a step pays.
        trace = traces.StepTrace(step) if tracing.ENABLED else None
        try:
            claimed = self._claim(step)
        except Exception as exc:
            # One step's trouble is its own; the others of its message go
            # on. A claim that failed took nothing.
            LOG.exception('Step %s of order %s failed', step.step,
                          step.order_id)
            if trace is not None:
                trace.end('failed: %s' % exc)
            return
        if claimed is None:
            if trace is not None:
                trace.not_claimed()
            return
        run, view = claimed
        if trace is not None:
            run = trace.claimed(run)
        if run.request != step.request and run.context is not None:
            # The order's row is authoritative; a message of an older
            # sender carries no ids.
            context.set_current(run.context)
        self._go_on(self._run_apply(step, run, view, trace))

    def _go_on(self, continuations):
        """Run the steps an apply claimed here: in this thread the one
        that holds no thread of its own, on a step thread each other;
        none once the service stops (``_give_back``)."""
        while continuations:
            if self._stopping:
                for handed in continuations:
                    if handed.reserved:
                        self._free_threads.release()
                self._give_back(continuations)
                return
            mine = None
            for handed in continuations:
                if handed.reserved:
                    self._start(handed)
                else:
                    mine = handed
            continuations = self._continue(mine) if mine else ()

    def _start(self, handed):
        """Run a continuation on the step thread reserved for it."""
        self._isolation.add()
        try:
            future = self._steps.submit(self._run_continued, handed)
        except RuntimeError:
            # Stopping (the executor shut down since _go_on looked).
            self._continued_ended()
            self._give_back([handed])
            return
        future.add_done_callback(
            lambda done: self._continued_ended(
                handed if done.cancelled() else None))

    def _continued_ended(self, unstarted=None):
        """A continuation on a thread of its own ended, or never ran:
        ``unstarted``, cancelled before it started (the service stops),
        is given back."""
        self._isolation.leave()
        self._free_threads.release()
        if unstarted is not None:
            self._give_back([unstarted])

    def _give_back(self, continuations):
        """Give back continuations claimed here that will not run (the
        service stops), and cast them to the workers that go on.

        Left claimed, they would wait for the recovery, which counts a
        crash of each once this process's heartbeat is gone (and fails
        a step at ``[worker] max_step_crashes``).
        """
        try:
            given_back, woken = self._claimer.release(
                [handed.run for handed in continuations])
        except Exception:
            LOG.exception('Could not give back %d step(s) claimed here and '
                          'not run (%s); the retry daemon takes them back '
                          'once this worker is gone', len(continuations),
                          ', '.join(handed.step.step
                                    for handed in continuations))
            return
        LOG.info('Gave back %d step(s) claimed here and not run (%s): the '
                 'worker is stopping', given_back,
                 ', '.join(handed.step.step for handed in continuations))
        # At the token of its claim, which the release left it at.
        self._applier.cast([
            handed.step._replace(generation=handed.run.token)
            for handed in continuations] + woken)

    def _run_continued(self, handed):
        """A continuation on a step thread of its own, and what follows."""
        self._go_on(self._continue(handed))

    def _continue(self, handed):
        """Run and apply a continuation; what its own result hands on."""
        with context.current(handed.run.context):
            trace = (traces.StepTrace(handed.step) if tracing.ENABLED
                     else None)
            run = handed.run if trace is None else trace.claimed(handed.run)
            return self._run_apply(handed.step, run, handed.view, trace)

    def _run_apply(self, step, run, view, trace):
        """Run a claimed step and apply its result; the continuations
        its apply hands over."""
        try:
            with self._isolation.around(run):
                result = (run.kind.run(run, view) if trace is None
                          else trace.run(run.kind.run, run, view))
        except Exception as exc:
            LOG.exception('Step %s of order %s failed', step.step,
                          step.order_id)
            if trace is not None:
                trace.end('failed: %s' % exc)
            return ()
        try:
            if trace is None:
                handed = self._apply((run, result))
            else:
                handed = trace.result(self._apply, (run, result))
                trace.end()
        except Exception as exc:
            if trace is not None:
                trace.end('result not written: %s' % exc)
            # The step is ours (claimed) until its lease ends: keep the
            # result and write it once the database answers again
            # (apply_deferred_results). Past the lease, the fencing
            # discards it.
            LOG.exception('Could not write the result of %s of order %s; '
                          'it is kept and written again every '
                          'report_interval', run.step, run.order_id)
            self._applier.keep(run, result)
            return ()
        return handed or ()
