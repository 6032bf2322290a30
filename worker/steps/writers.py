"""The applier's writers: one transaction for a batch of results.

The applier (``worker.steps.apply``) is given its writer once, when it
is built, as River's ``JobCompleter`` is (inline, async or batch):

- ``OneAtATime`` decides each result just before its writes and executes
  them (``writes.write_one``); a result whose fence finds its step or
  order moved on after another of its writes went through rolls the
  batch back, which is written again without it (its ``superseded``
  row);
- ``Grouped`` writes together, by kind (``writes.write_batch``), the
  results whose writes all have a batched form, each the only workflow
  step of its order in the batch; the others one at a time, as
  ``OneAtATime``. A batch in which a result moved on is handed whole to
  its ``fallback``, a ``OneAtATime``, which finds that result
  superseded: a batched write cannot tell which of its rows moved.

``choose`` builds the writer every database has today: ``Grouped``,
with a ``OneAtATime`` fallback (``worker.db.statements.execute_many``
gives each database a batched form of every ``*_many`` write).

Every result leaves its run's row in its order's history
(``writes.RecordRun``), a discarded one a ``superseded`` row: the rows of
the results written one at a time, or discarded, go in the batch's one
INSERT of them.
"""

import collections
import dataclasses
import itertools

from worker.db import models
from worker.steps import flow
from worker.steps import transactions
from worker.steps import writes


def choose(database, clock, continuer=None):
    """The writer of an applier over ``database``: ``Grouped``, falling
    back on ``OneAtATime``.

    :param clock: returns the current UTC time (naive).
    :param continuer: a ``worker.steps.continuation.Continuer`` that
        claims, in the results' transaction, some of the steps they made
        ready; or None.
    """
    return Grouped(database, clock, continuer,
                   fallback=OneAtATime(database, clock, continuer))


class OneAtATime:
    """Writes a batch of results in one transaction, each decided just
    before its writes.

    :param clock: returns the current UTC time (naive).
    :param continuer: see ``choose``.
    """

    def __init__(self, database, clock, continuer=None):
        self._database = database
        self._repositories = database.repositories
        self._clock = clock
        self._continuer = continuer

    def write(self, items, continuing, undone=None):
        """Write the results ``items`` ``[(run, result), ...]`` in one
        transaction: ``(decided, woken, claims)``, once committed.

        ``decided``, per item: its ``runs.Decision`` as written, or None
        (superseded). ``woken``: the deliveries the batch's events woke,
        and the steps waiting for the resource slots the runs freed
        (``flow.release``: every run's result frees its slots, a
        superseded one's too). ``claims``: the ``continuation.Claims`` of
        the ready steps claimed in the same transaction (``continuing``),
        or None.

        :param undone: ``{index: its superseded history rows}``, the
            results already found superseded after a write of theirs.
        """
        undone = {} if undone is None else undone
        while True:
            try:
                return self._write_results(items, undone, continuing)
            except _Undo as undo:
                # One result wrote, then found its step or order moved
                # on: the batch is written again without it, with its
                # superseded row.
                undone[undo.index] = undo.recorded

    @transactions.retried
    def _write_results(self, items, undone, continuing):
        """``write``'s one transaction. A result found superseded is
        decided again if the transaction runs again (the race it lost was
        maybe with a rolled-back write); one in ``undone`` is skipped."""
        now = self._clock()
        decided = [None] * len(items)
        # The history rows of the results not written in the batch: in
        # the batch's INSERT of them, not one INSERT a result.
        recorded = [row for rows in undone.values() for row in rows]
        claims = None
        try:
            with self._database.session() as session, session.begin():
                woken = self._write_in(
                    _Batch(session, items, decided, recorded, now),
                    [index for index in _in_lock_order(items)
                     if index not in undone])
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

    def _write_in(self, batch, indexes):
        """Write the results at ``indexes`` of ``batch``, their decisions
        into ``batch.decided``; the steps woken."""
        batch.prepared = self._prepare(batch, indexes)
        together = []
        for _, group in itertools.groupby(
                indexes, key=lambda index: batch.items[index][0].order_id):
            together.extend(self._write_order(batch, list(group)))
        # The deliveries the batch's events woke are cast with the
        # steps the resource slots woke: a batch is written whole or
        # not at all.
        woken = writes.write_batch(
            batch.session, self._repositories,
            [batch.decided[index].writes for index in together] +
            [self._of_orders_kept(batch.session, batch.recorded)],
            batch.now)
        woken += flow.release(batch.session, self._repositories,
                              [run for run, _ in batch.items], batch.now)
        return woken

    def _write_order(self, batch, group):
        """Write the results ``group`` of one order, each decided after
        the writes of the one before (parallel steps of one order); the
        indexes of those left to write together (none here)."""
        for index in group:
            batch.decided[index] = self._write_one(
                batch, index, self._decide(batch, index))
        return ()

    def _prepare(self, batch, indexes):
        """``{kind: facts}``: what each kind that has a ``prepare`` (a
        delivery's: its orders' locks and last sequences) reads once for
        all its results of the batch, before any of them is written (an
        order's deliveries are decided before its other results)."""
        found = collections.defaultdict(list)
        for index in indexes:
            run = batch.items[index][0]
            if hasattr(run.kind, 'prepare'):
                found[run.kind].append(run)
        return {kind: kind.prepare(batch.session, self._repositories,
                                   kind_runs, batch.now)
                for kind, kind_runs in found.items()}

    def _decide(self, batch, index):
        run, result = batch.items[index]
        return run.kind.decide(batch.session, self._repositories, run,
                               result, batch.now,
                               batch.prepared.get(run.kind))

    def _of_orders_kept(self, session, recorded):
        """The history rows ``recorded`` but the superseded ones of
        orders gone: a run can outlive its order (a zombie's, past a
        ``db purge``), and its row would belong to no order. Superseded
        results are rare: one primary-key read for each."""
        orders = self._repositories.orders
        return [row for row in recorded
                if row.result != models.RUN_SUPERSEDED or
                orders.status_of(session, row.order_id) is not None]

    def _write_one(self, batch, index, decision):
        """Execute one result's writes but its history row, which it adds
        to ``batch.recorded`` (as ``superseded`` if it was): its decision,
        with the steps its writes woke among its casts, or None if
        superseded.
        """
        run = batch.items[index][0]
        if decision is None:
            batch.recorded.append(writes.RecordRun.of(
                run, models.RUN_SUPERSEDED))
            return None
        rows = [write for write in decision.writes
                if isinstance(write, writes.RecordRun)]
        superseded = [row.superseded() for row in rows]
        try:
            woken = writes.write_one(batch.session, self._repositories, [
                write for write in decision.writes
                if not isinstance(write, writes.RecordRun)], batch.now)
        except writes.Undone:
            raise _Undo(index, superseded)
        if woken is None:
            batch.recorded.extend(superseded)
            return None
        batch.recorded.extend(rows)
        if woken:
            decision = dataclasses.replace(decision,
                                           casts=decision.casts + woken)
        return decision


class Grouped(OneAtATime):
    """Writes a batch of results in one transaction, those that may go
    together by kind, after the others.

    The results whose writes are all ``batched``, of orders whose results
    in the batch are of one workflow step at most (and its deliveries),
    are written together by kind; the others one at a time.

    :param fallback: the ``OneAtATime`` writer of a batch in which a
        result written together found its step or order moved on.
    """

    def __init__(self, database, clock, continuer=None, *, fallback):
        super().__init__(database, clock, continuer)
        self._fallback = fallback

    def write(self, items, continuing, undone=None):
        """As ``OneAtATime.write``; a batch in which a result written
        together moved on is written again by the fallback, which finds
        it superseded."""
        undone = {} if undone is None else undone
        try:
            return super().write(items, continuing, undone)
        except writes.Moved:
            return self._fallback.write(items, continuing, undone)

    def _write_order(self, batch, group):
        """Decide the results ``group`` of one order; if they may go
        together, the indexes to write together, else written one at a
        time now (nothing to write together)."""
        if not _one_workflow_step(batch.items, group):
            return super()._write_order(batch, group)
        found = [self._decide(batch, index) for index in group]
        if all(decision is not None and writes.batched(decision.writes)
               for decision in found):
            for index, decision in zip(group, found):
                batch.decided[index] = decision
            return group
        for index, decision in zip(group, found):
            batch.decided[index] = self._write_one(batch, index, decision)
        return ()


class _Batch:
    """One transaction's batch of results: its session and moment, the
    decisions written (``decided``, per item), the history rows to insert
    at its end (``recorded``), and what its kinds read first
    (``prepared``)."""

    __slots__ = ('session', 'items', 'decided', 'recorded', 'now',
                 'prepared')

    def __init__(self, session, items, decided, recorded, now):
        self.session = session
        self.items = items
        self.decided = decided
        self.recorded = recorded
        self.now = now
        self.prepared = {}


def _in_lock_order(items):
    """The indexes of ``items`` in the order of their orders and steps, so
    that two processes writing results of the same orders lock them in
    the same order. Within an order, its deliveries before its workflow
    steps: a delivery's result, decided on the order's last event as it
    was before this transaction, is written before the events of the
    others, which then find it DONE and wake it."""
    return sorted(range(len(items)),
                  key=lambda index: (items[index][0].order_id,
                                     items[index][0].kind.runs_workflow,
                                     items[index][0].step))


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
