"""Applies: write the results of runs, in batches, and cast what they made
ready.

A result is decided by its run's kind (``runs.Run.kind``: a workflow
step's ``worker.steps.outcomes``, a delivery's
``worker.steps.delivery``) as writes (``worker.steps.writes``), each
conditional on the run's token. The results of the runs that end while a
batch is being written go together in the next one
(``worker.common.group_commit``), in one transaction, written by the
writer the applier was built with (``worker.steps.writers``: together by
kind where they may, else one at a time). A result whose step or order
moved on costs only itself: it is discarded, with a ``superseded`` row
in its order's history.

A result that cannot be applied (its decision or its writes raise, the
database being up: an order type that gained a step while the order was
in flight, a value the database refuses) costs only its own order too:
a batch that raises so is written again one result at a time, and that
result's step fails instead, in a transaction of its own (its kind's
``unapplied``: a workflow step's order goes to ERROR, naming the step and
the error). Only a database outage (``transactions.is_outage``) keeps
the batch's results to write them again later (``keep``). Only the
write and its commit feed that fallback: what follows the commit (the
announcements, the continuations handed over, the casts) never writes a
committed result again; its failure is logged.
"""

import threading

from oslo_log import log as logging

from worker.steps import announce
from worker.steps import runs
from worker.steps import traces
from worker.steps import transactions
from worker.steps import writers
from worker import tracing

LOG = logging.getLogger(__name__)


class Applier:
    """Writes batches of results ``[(run, result), ...]``.

    :param clock: returns the current UTC time (naive).
    :param worker_api: a ``worker.rpcapi.WorkerAPI`` to cast the steps
        the results made ready; None leaves them to the retry scheduler's
        recovery.
    :param observe_result: called with each result's kind, ``superseded``
        for one discarded.
    :param max_cast: the most steps cast in one message.
    :param announcer: a ``worker.notifications.bus.Announcer`` that announces
        the orders a batch ended, or None.
    :param continuer: a ``worker.steps.continuation.Continuer`` that
        claims some of the steps the results made ready, to run here
        instead of casting them; or None.
    :param writer: what writes a batch in one transaction
        (``worker.steps.writers``); by default the one
        ``writers.choose`` picks for ``database``, chosen once here.
    """

    def __init__(self, database, clock, worker_api, observe_result,
                 max_cast, announcer=None, continuer=None, writer=None):
        self._writer = writer or writers.choose(database, clock, continuer)
        self._clock = clock
        self._worker_api = worker_api
        self._observe_result = observe_result
        self._max_cast = max_cast
        self._announcer = announcer
        # Results the database refused: (run, result).
        self._deferred = []
        self._deferred_lock = threading.Lock()

    def apply_batch(self, items, continuing=True):
        """Write the results ``items`` in one transaction
        (``GroupCommit``); log and count them, cast the steps they made
        ready.

        A batch whose write raises, the database being up
        (``transactions.is_outage``), holds a result that cannot be
        applied: written again one result at a time, each in its own
        transaction, the others go through and that one fails its step
        (``_apply_alone``). Only a batch that raised pays for it. What
        follows the commit never feeds that fallback (``_after_commit``).

        :param continuing: the thread of each item waits for its answer
            and runs what it is handed (``continuation``).
        :returns: per item, the ``continuation.Continuation`` list its
            thread runs: steps it made ready, claimed in the same
            transaction, and not cast.
        :raises: what the database raised for the batch in an outage:
            the caller keeps the results (``keep``).
        """
        try:
            written = self._writer.write(items, continuing)
        except Exception as exc:
            if transactions.is_outage(exc):
                raise
            if len(items) == 1:
                return [self._unapplied(items[0], exc, continuing)]
            LOG.warning('A batch of %d results raised %s: %s; each is '
                        'written again alone', len(items),
                        type(exc).__name__, exc, context=None)
            return [self._apply_alone(item, continuing) for item in items]
        return self._after_commit(items, written)

    def _apply_alone(self, item, continuing):
        """Write one result ``(run, result)`` in a transaction of its own;
        the continuations it hands on.

        A result refused by an outage is kept; one that raises otherwise
        cannot be applied, and fails its step (``_unapplied``).
        """
        try:
            return self._write_alone(item, continuing)
        except Exception as exc:
            if not transactions.is_outage(exc):
                return self._unapplied(item, exc, continuing)
            self._keep_refused(item, exc)
            return []

    def _unapplied(self, item, exc, continuing):
        """Fail the step of a result that raised ``exc``, not an outage,
        in its own transaction: its kind's ``unapplied`` outcome is
        written instead (a workflow step's order goes to ERROR, naming the
        step and ``exc``, and may be resumed). The continuations that
        hands on.

        Should that raise too, the result is kept: written again every
        ``report_interval`` while its lease lasts, never at once.
        """
        run, _ = item
        error = runs.StepError.of(exc).description
        LOG.error('The result of step %s of order %s (token %d) could not '
                  'be applied (%s); the step fails', run.step, run.order_id,
                  run.token, error, exc_info=exc, context=run.context)
        try:
            return self._write_alone(
                (run, run.kind.unapplied(run, error)), continuing)
        except Exception as failure:
            self._keep_refused(item, failure)
            return []

    def _write_alone(self, item, continuing):
        """Write one result in a transaction of its own, then what
        follows its commit (which raises nothing); the continuations it
        hands on. Raises what the write raised."""
        [handed] = self._after_commit([item],
                                      self._writer.write([item], continuing))
        return handed

    def _keep_refused(self, item, exc):
        """Keep a result refused by the database (``keep``), and say so."""
        run, result = item
        LOG.error('Could not write the result of %s of order %s (%s); it '
                  'is kept and written again every report_interval',
                  run.step, run.order_id, exc, exc_info=exc,
                  context=run.context)
        self.keep(run, result)

    def _after_commit(self, items, written):
        """What follows the commit of ``items``, ``written`` as the
        writer's ``write`` gives it: hand over the continuations claimed
        with it, announce, log and count the results, cast the steps they
        made ready; the continuations.

        The results are committed: nothing here may write them again. A
        failure is logged, and what it kept from being cast is left to
        the retry daemon (``dispatch_deadline_seconds``), as a cast that
        fails is (``cast``); continuations handed over before it still
        run.
        """
        decided, woken, claims = written
        continuations, taken = [[] for _ in items], set()
        try:
            if claims is not None:
                continuations, taken = claims.settle(items)
            self._report_and_cast(items, decided, woken, taken)
        except Exception as exc:
            LOG.error('%d result(s) were written, but what follows their '
                      'commit failed (%s: %s); the retry daemon dispatches '
                      'the steps they made ready', len(items),
                      type(exc).__name__, exc, exc_info=exc, context=None)
        return continuations

    def _report_and_cast(self, items, decided, woken, taken):
        """Announce, log and count the committed results ``items``; cast
        the steps they made ready but those ``taken`` (claimed here)."""
        announce.announce_writes(self._announcer, items, decided,
                                 self._clock())
        casts = []
        for (run, _), decision in zip(items, decided):
            if decision is None:
                # This thread's context is its own step's order's: each
                # line about a result names its own.
                LOG.warning('Step %s of order %s moved past token %d while '
                            'it ran; its result was discarded', run.step,
                            run.order_id, run.token, context=run.context)
                self._observe_result(runs.SUPERSEDED)
                continue
            # Logged after the commit: one such line per state change.
            LOG.info('Order %s (%s, token %d): %s', run.order_id, run.step,
                     run.token, decision.description, context=run.context)
            self._observe_result(decision.kind)
            casts.extend(decision.casts)
        if woken:
            LOG.debug('Woke %d step(s): deliveries with new events, or '
                      'steps waiting for the resource slots the results '
                      'freed', len(woken))
        casts += woken
        if taken:
            casts = [step for step in casts
                     if (step.order_id, step.step) not in taken]
        if tracing.ENABLED:
            casts = traces.join(casts, items)
        self.cast(casts)

    def keep(self, run, result):
        """Keep a result the database refused, to write it again later.

        The step is ours (claimed) until its lease ends; past the lease,
        the fencing discards it.
        """
        with self._deferred_lock:
            self._deferred.append((run, result))

    def apply_deferred_results(self):
        """Write again the results that the database refused (an outage).

        A result still refused stays for the next call; one whose step
        moved on is discarded by the fencing.
        """
        with self._deferred_lock:
            deferred, self._deferred = self._deferred, []
        if not deferred:
            return
        try:
            # In the timer's thread: no step thread waits to run what
            # the results made ready, which is cast.
            self.apply_batch(deferred, continuing=False)
        except Exception as exc:
            LOG.warning('%d result(s) still not written: %s', len(deferred),
                        exc, context=None)
            with self._deferred_lock:
                self._deferred.extend(deferred)
        else:
            LOG.info('%d result(s) written after the database came back',
                     len(deferred), context=None)

    def cast(self, steps):
        """Cast ``steps``, committed as dispatched, ``max_cast`` a
        message; a cast that fails is left to the retry daemon."""
        if not steps or self._worker_api is None:
            return
        for start in range(0, len(steps), self._max_cast):
            chunk = steps[start:start + self._max_cast]
            try:
                self._worker_api.run_steps(chunk)
            except Exception as exc:
                # Committed as dispatched: the retry daemon casts them
                # again after dispatch_deadline_seconds.
                LOG.warning('Could not cast %d ready step(s) (%s); the '
                            'retry daemon will dispatch them: %s',
                            len(chunk), ', '.join(s.step for s in chunk),
                            exc, context=None)
