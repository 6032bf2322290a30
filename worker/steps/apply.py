"""Applies: write the results of runs, in batches, and cast what they made
ready.

A result is decided by its run's kind (``runs.Run.kind``: a workflow
step's ``worker.steps.outcomes``, a delivery's
``worker.steps.delivery``) as writes (``worker.steps.writes``), each
conditional on the run's token. The results of the runs that end while a
batch is being written go together in the next one
(``worker.common.group_commit``), in one transaction: those whose writes
all have a batched form, each the only result of its order in the batch,
are written together by kind; the others one at a time, each decided
just before its writes. A result whose step or order moved on costs only
itself: it is discarded, and if it had written already, the batch is
written again without it.

Every result leaves its run's row in its order's history
(``writes.RecordRun``), a discarded one a ``superseded`` row: the rows of
the results written one at a time, or discarded, go in the batch's one
INSERT of them.

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

import collections
import dataclasses
import itertools
import threading

from oslo_log import log as logging

from worker.db import models
from worker.steps import announce
from worker.steps import flow
from worker.steps import runs
from worker.steps import traces
from worker.steps import transactions
from worker.steps import writes
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
    """

    def __init__(self, database, clock, worker_api, observe_result,
                 max_cast, announcer=None, continuer=None):
        self._database = database
        self._repositories = database.repositories
        self._clock = clock
        self._worker_api = worker_api
        self._observe_result = observe_result
        self._max_cast = max_cast
        self._announcer = announcer
        self._continuer = continuer
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
            written = self._write(items, continuing)
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
                                      self._write([item], continuing))
        return handed

    def _keep_refused(self, item, exc):
        """Keep a result refused by the database (``keep``), and say so."""
        run, result = item
        LOG.error('Could not write the result of %s of order %s (%s); it '
                  'is kept and written again every report_interval',
                  run.step, run.order_id, exc, exc_info=exc,
                  context=run.context)
        self.keep(run, result)

    def _write(self, items, continuing):
        """``apply_batch``'s one transaction for every result ``items``:
        ``(decided, woken, claims)`` as ``_write_results`` gives them,
        once committed."""
        undone = {}
        batched = True
        while True:
            try:
                return self._write_results(items, undone, batched,
                                           continuing)
            except _Undo as undo:
                # One result wrote, then found its step or order moved
                # on: the batch is written again without it, with its
                # superseded row.
                undone[undo.index] = undo.recorded
            except writes.Moved:
                # A step or order of the batch moved on: written again one
                # result at a time, which finds the result superseded.
                batched = False

    def _after_commit(self, items, written):
        """What follows the commit of ``items``, ``written`` as ``_write``
        gives it: hand over the continuations claimed with it, announce,
        log and count the results, cast the steps they made ready; the
        continuations.

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

    @transactions.retried
    def _write_results(self, items, undone, batched, continuing):
        """Per item, its ``runs.Decision`` as written, or None
        (superseded); the steps woken by the batch: the deliveries its
        events woke, and the steps waiting for the resource slots the runs
        freed (``flow.release``: every run's result frees its slots,
        a superseded one's too); and the ``continuation.Claims`` of the
        ready steps claimed in the same transaction (``continuing``), or
        None.

        ``batched``: the results whose writes are all ``batched``, of
        orders whose results in the batch are of one workflow step at
        most (and its deliveries), are written together by kind, after
        the others. A result found superseded is decided again
        if the transaction runs again (the race it lost was maybe with a
        rolled-back write); one in ``undone`` (``{index: its superseded
        history rows}``) is skipped.

        :raises writes.Moved: a batched result was superseded.
        """
        now = self._clock()
        decided = [None] * len(items)
        # The history rows of the results not written in the batch: in
        # the batch's INSERT of them, not one INSERT a result.
        recorded = [row for rows in undone.values() for row in rows]
        # In the order of their orders and steps, so that two processes
        # writing results of the same orders lock them in the same order.
        # Within an order, its deliveries before its workflow steps: a
        # delivery's result, decided on the order's last event as it was
        # before this transaction, is written before the events of the
        # others, which then find it DONE and wake it.
        indexes = sorted((index for index in range(len(items))
                          if index not in undone),
                         key=lambda index: (
                             items[index][0].order_id,
                             items[index][0].kind.runs_workflow,
                             items[index][0].step))
        claims = None
        try:
            with self._database.session() as session, session.begin():
                woken = self._write_in(session, items, indexes, batched,
                                       decided, recorded, now)
                if continuing and self._continuer is not None:
                    # Its own moment: a claim's ``now`` is unique among
                    # this process's claims (``steps.claim_many``).
                    claims = self._continuer.claim(
                        session, items, decided, woken, self._clock())
        except BaseException:
            if claims is not None:
                claims.abandon()
            raise
        return decided, woken, claims

    def _write_in(self, session, items, indexes, batched, decided,
                  recorded, now):
        """Write the results of ``items`` (``_write_results``) in
        ``session``, their decisions into ``decided``; the steps woken."""
        batch = []
        prepared = self._prepare(session, items, indexes, now)
        for _, group in itertools.groupby(
                indexes, key=lambda index: items[index][0].order_id):
            group = list(group)
            if batched and _one_workflow_step(items, group):
                found = [self._decide(session, items[index], now,
                                      prepared) for index in group]
                if all(decision is not None and
                       writes.batched(decision.writes)
                       for decision in found):
                    batch.extend(group)
                    for index, decision in zip(group, found):
                        decided[index] = decision
                    continue
                for index, decision in zip(group, found):
                    decided[index] = self._write_one(
                        session, index, items[index][0], decision, now,
                        recorded)
                continue
            # Parallel steps of one order: each decided after the
            # writes of the one before.
            for index in group:
                decided[index] = self._write_one(
                    session, index, items[index][0],
                    self._decide(session, items[index], now, prepared),
                    now, recorded)
        # The deliveries the batch's events woke are cast with the
        # steps the resource slots woke: a batch is written whole or
        # not at all.
        woken = writes.write_batch(
            session, self._repositories,
            [decided[index].writes for index in batch] +
            [self._of_orders_kept(session, recorded)], now)
        woken += flow.release(session, self._repositories,
                              [run for run, _ in items], now)
        return woken

    def _prepare(self, session, items, indexes, now):
        """``{kind: facts}``: what each kind that has a ``prepare`` (a
        delivery's: its orders' locks and last sequences) reads once for
        all its results of the batch, before any of them is written (an
        order's deliveries are decided before its other results)."""
        found = collections.defaultdict(list)
        for index in indexes:
            run = items[index][0]
            if hasattr(run.kind, 'prepare'):
                found[run.kind].append(run)
        return {kind: kind.prepare(session, self._repositories, kind_runs,
                                   now)
                for kind, kind_runs in found.items()}

    def _decide(self, session, item, now, prepared):
        run, result = item
        return run.kind.decide(session, self._repositories, run, result,
                               now, prepared.get(run.kind))

    def _of_orders_kept(self, session, recorded):
        """The history rows ``recorded`` but the superseded ones of
        orders gone: a run can outlive its order (a zombie's, past a
        ``db purge``), and its row would belong to no order. Superseded
        results are rare: one primary-key read for each."""
        orders = self._repositories.orders
        return [row for row in recorded
                if row.result != models.RUN_SUPERSEDED or
                orders.status_of(session, row.order_id) is not None]

    def _write_one(self, session, index, run, decision, now, recorded):
        """Execute one result's writes but its history row, which it adds
        to ``recorded`` (as ``superseded`` if it was): its decision, with
        the steps its writes woke among its casts, or None if superseded.
        """
        if decision is None:
            recorded.append(writes.RecordRun.of(run,
                                                models.RUN_SUPERSEDED))
            return None
        rows = [write for write in decision.writes
                if isinstance(write, writes.RecordRun)]
        superseded = [row.superseded() for row in rows]
        try:
            woken = writes.write_one(session, self._repositories, [
                write for write in decision.writes
                if not isinstance(write, writes.RecordRun)], now)
        except writes.Undone:
            raise _Undo(index, superseded)
        if woken is None:
            recorded.extend(superseded)
            return None
        recorded.extend(rows)
        if woken:
            decision = dataclasses.replace(decision,
                                           casts=decision.casts + woken)
        return decision

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


def _one_workflow_step(items, group):
    """True if the results ``group`` (of one order) are of one workflow
    step at most, with any of its deliveries: their writes are of
    different rows, and may go in a batch together."""
    return sum(items[index][0].kind.runs_workflow for index in group) <= 1


class _Undo(Exception):
    """Roll the batch back: the result at ``index`` was superseded after a
    write; ``recorded`` are its history rows as superseded."""

    def __init__(self, index, recorded):
        super().__init__(index)
        self.index = index
        self.recorded = recorded
