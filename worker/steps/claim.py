"""Claims: take steps for one run each, fenced, in batches.

A claim moves a step's generation from the one its message carries to
the next (the run's token) and takes a lease on it for its policy's
``timeout_seconds``. A step whose generation is stale (a duplicate, or one
overtaken by later work) claims nothing and is dropped. The claims of
the steps that reach the database while a batch is being written go
together in the next one (``worker.common.group_commit``), each still
fenced on its own generation.

A step that needs resource keys (``worker.steps.flow``) is claimed only
if it takes a slot of each, in the same transaction; one that cannot is
not claimed, and waits without counting as a failure. So does a step
that a pause holds (``worker.steps.pauses``), and a step that crashed
before, while another that did is claimed in this process
and has not run (``worker.steps.isolation``).
"""

import datetime
import types
import typing

from oslo_log import log as logging

from worker import context
from worker.db import models
from worker import order_types
from worker.plugins import base
from worker.steps import flow
from worker.steps import graphs
from worker.steps import leases
from worker.steps import pauses
from worker.steps import runs
from worker.steps import signals as step_signals
from worker.steps import transactions
from worker import tracing
from worker import values

LOG = logging.getLogger(__name__)


class Claimer:
    """Claims batches of steps (``values.StepRef``) for this process.

    :param kinds: the ``worker.steps.kinds.Kinds`` of this worker.
    :param owner: this process's name (``pid@host``), recorded as the
        owner of the steps it claims.
    :param clock: returns the current UTC time (naive).
    :param observe_result: called with ``stale`` for each step dropped.
    :param isolation: the process's ``worker.steps.isolation.Isolation``,
        or None to claim steps that crashed as any other.
    """

    def __init__(self, database, kinds, owner, clock, observe_result,
                 isolation=None):
        self._database = database
        self._repositories = database.repositories
        self._kinds = kinds
        self._owner = owner
        self._clock = clock
        self._observe_result = observe_result
        self._leases = leases.Leases(database, owner, clock)
        self._limits = kinds.limits
        self._isolation = isolation
        self._graphs = graphs.Graphs()

    def claim_batch(self, steps):
        """Claim ``steps`` in one transaction (``GroupCommit``).

        :returns: per step, ``(Run, OrderView)``, or None if it was not
            claimed. A delivery's view is what it will send
            (``posting.Pending``).
        """
        claimed = self._claim_in_a_transaction(steps)
        if self._isolation is not None:
            # Batches are claimed one at a time: the next one's claim sees
            # the suspect this one took.
            for answer in claimed.answers:
                if answer is not None and self._isolation.suspect(answer[0]):
                    self._isolation.reserve(answer[0])
        self.report(claimed)
        return claimed.answers

    def report(self, claimed):
        """Log and count the steps of a ``Claimed`` that wait or were
        dropped; after its transaction committed, so a retried one logs
        once."""
        for step, refusal in claimed.waiting:
            LOG.info('Step %s of order %s waits: %s', step.step,
                     step.order_id, _waits_for(refusal),
                     context=context.for_ids(step.request))
            self._observe_result(runs.WAITING)
        for step, row in claimed.dropped:
            # In the thread that writes the batch, whose current context
            # is its own step's order's: each line names its own.
            LOG.info('Dropped %s of order %s with stale token %d (step is '
                     '%s)', step.step, step.order_id, step.generation,
                     _describe(row), context=context.for_ids(step.request))
            self._observe_result(runs.STALE)

    @transactions.retried
    def _claim_in_a_transaction(self, steps):
        now = self._clock()
        with self._database.session() as session, session.begin():
            return self.claim_in(session, steps, now, isolate=True)

    def claim_in(self, session, steps, now, isolate=False):
        """Claim ``steps`` at ``now`` in the caller's transaction (a
        claim's own, or the apply's that made them ready:
        ``worker.steps.continuation``); a ``Claimed``, to ``report`` once
        it committed.

        With ``isolate``, at most one step that crashed before is
        claimed, none while one is claimed here and has not run. (A
        continuation never crashed: it was just made ready.)
        """
        # One read of the orders and their steps, then one conditional
        # claim: the steps' rows as read hold for the generations the
        # claim moves from.
        found = self._repositories.orders.with_steps_many(
            session, {step.order_id for step in steps})
        wanted, dropped = self._wanted(steps, found)
        refused = self._isolate(steps, wanted, now) if isolate else {}
        # Before the limits: a paused step takes no slot.
        refused.update(self._kinds.holds.refusals(
            session, _pause_candidates(wanted, refused), now))
        refused.update(self._limit(session, steps, {
            index: facts for index, facts in wanted.items()
            if index not in refused}, now))
        claims = [(steps[index].order_id, steps[index].step,
                   steps[index].generation, now + _seconds(facts.policy))
                  for index, facts in wanted.items()
                  if index not in refused]
        claimed = self._repositories.steps.claim_many(
            session, claims, now, self._owner) if claims else set()
        if refused or any(facts.taken for facts in wanted.values()):
            self._settle(session, steps, wanted, claimed, refused, now)
        pending = self._read_pending(session, steps, wanted, claimed)
        signals = step_signals.read(session, self._repositories, [
            (steps[index], facts.workflow) for index, facts in wanted.items()
            if facts.kind.runs_workflow and
            (steps[index].order_id, steps[index].step) in claimed])
        answers = [None] * len(steps)
        waiting = []
        for index, facts in wanted.items():
            step = steps[index]
            if index in refused:
                waiting.append((step, refused[index]))
            elif (step.order_id, step.step) in claimed:
                answers[index] = self._claimed(
                    step, now, facts,
                    pending.get((step.order_id, step.step)),
                    signals.get((step.order_id, step.step), ()))
            else:
                dropped.append((step, facts.rows[step.step]))
        return Claimed(answers, dropped, waiting)

    @transactions.retried
    def release(self, claimed):
        """Give back the runs ``claimed`` here and never run (this process
        stops), in one transaction (``steps.release_many``): their steps
        are PENDING again, no crash nor failure counted, and the resource
        slots they held are freed.

        :returns: ``(given back, woken)``: how many steps were given back
            (the others had moved on), and the steps waiting for the slots
            freed that were woken, to cast after the commit.
        """
        now = self._clock()
        with self._database.session() as session, session.begin():
            given_back = self._repositories.steps.release_many(session, [
                (run.order_id, run.step, run.token, run.attempt - 1,
                 # Set by the claim of the step's first run only.
                 run.started_at if run.attempt > 1 else None)
                for run in claimed], now)
            woken = flow.release(session, self._repositories, claimed, now)
        return given_back, woken

    def _read_pending(self, session, steps, wanted, claimed):
        """What the deliveries claimed will send: their URLs and events,
        read for all of them at once (``posting.read_pending``), so that
        a run reads nothing of its own."""
        deliveries = [
            (steps[index].order_id, steps[index].step,
             facts.rows[steps[index].step])
            for index, facts in wanted.items()
            if not facts.kind.runs_workflow and
            (steps[index].order_id, steps[index].step) in claimed]
        if not deliveries:
            return {}
        return self._kinds.delivery.read_pending(
            session, self._repositories, deliveries)

    def _isolate(self, steps, wanted, now):
        """``{index: flow.Refusal}`` of the steps of ``wanted`` that
        crashed before, but the first, or all while one is claimed here
        and has not run: each is cast again after the isolation's
        ``recheck_seconds``."""
        if self._isolation is None:
            return {}
        refused = {}
        busy = self._isolation.busy()
        for index, facts in wanted.items():
            if not self._isolation.suspect(facts.rows[steps[index].step]):
                continue
            if busy:
                refused[index] = flow.Refusal(
                    None, now + datetime.timedelta(
                        seconds=self._isolation.recheck_seconds),
                    why='another step that crashed runs alone in this '
                        'process')
            busy = True
        return refused

    def _limit(self, session, steps, wanted, now):
        """Take the slots and starts of the steps of ``wanted`` that need
        keys; ``{index: flow.Refusal}`` of those that could not."""
        limited = {index: ((steps[index].order_id, steps[index].step,
                            steps[index].generation + 1), facts.need)
                   for index, facts in wanted.items()
                   if facts.need is not None and facts.need.keys}
        if not limited:
            return {}
        taken, refused = flow.take(session, self._repositories, limited,
                                   now, self._limits.recheck_seconds)
        for index, took in taken.items():
            wanted[index].taken.append(took)
        return refused

    def _settle(self, session, steps, wanted, claimed, refused, now):
        """Give back what the steps not claimed took (a duplicate beaten
        by another claim), and make the refused ones wait."""
        for index, facts in wanted.items():
            step = steps[index]
            if facts.taken and index not in refused and \
                    (step.order_id, step.step) not in claimed:
                flow.undo(session, self._repositories, facts.taken[0], now)
        if refused:
            flow.park(session, self._repositories, [
                (steps[index], wanted[index].order.priority, refusal)
                for index, refusal in refused.items()], now)

    def _wanted(self, steps, found):
        """The steps of the batch to claim, by index, with what their runs
        need: ``{index: _Wanted}``; and those dropped, ``[(step, row),
        ...]``."""
        wanted, dropped, taken = {}, [], set()
        for index, step in enumerate(steps):
            order, rows = found.get(step.order_id, (None, {}))
            row = rows.get(step.step)
            key = (step.order_id, step.step)
            # A step twice in one batch (a duplicate message) is claimed
            # once.
            if row is None or key in taken or (
                    row.generation, row.status) != (
                    step.generation, models.STEP_PENDING):
                dropped.append((step, row))
                continue
            kind = self._kinds.of(step.step)
            try:
                workflow = self._graphs.of(order, rows, kind)
            except (order_types.UnknownOrderType,
                    order_types.UnknownWorkflowVersion) as exc:
                # Not claimed, so no attempt counted: a worker that knows
                # the type and the graph takes it once the dispatch
                # deadline passes (in a rolling upgrade, a newer one).
                self._graphs.cannot_run(step, order, exc)
                continue
            policy = kind.policy(workflow, step.step)
            need = self._limits.need(workflow, step.step, policy, order,
                                     rows) if kind.runs_workflow else None
            wanted[index] = _Wanted(order, rows, kind, workflow, policy,
                                    need, [])
            taken.add(key)
        return wanted, dropped

    def _claimed(self, step, now, facts, pending, signals=()):
        """The ``(Run, OrderView)`` of a step just claimed at ``now``; a
        delivery's view is its ``pending`` (``posting.Pending``), a
        workflow step's holds its unconsumed ``signals`` (rows)."""
        workflow = facts.workflow
        run = _run(step, now, facts, self._owner,
                   workflow is not None and
                   self._kinds.workflow_step.step_events(workflow), signals)
        if not facts.kind.runs_workflow:
            return run, pending
        if not workflow.has_step(step.step):
            return run, None
        return run, _view(facts.order, workflow, facts.rows, run,
                          self._leases.extender(run), signals)


class Claimed(typing.NamedTuple):
    """What one claim of a batch of steps found."""

    #: Per step, ``(Run, view)``, or None if it was not claimed.
    answers: list[typing.Any]
    #: ``[(step, row), ...]`` of the steps whose generation was stale.
    dropped: list[tuple[typing.Any, typing.Any]]
    #: ``[(step, flow.Refusal), ...]`` of the steps that wait for a
    #: resource key (parked in the claim's transaction).
    waiting: list[tuple[typing.Any, flow.Refusal]]


class _Wanted(typing.NamedTuple):
    """A step of a batch to claim, with what its run needs."""

    order: typing.Any
    #: ``{step: row}`` of its order, as read by the claim.
    rows: typing.Mapping[str, typing.Any]
    kind: runs.StepKind
    workflow: typing.Any
    policy: typing.Any
    #: The keys its run needs (``flow.Need``), or None.
    need: flow.Need | None
    #: What it took of them in this transaction (``flow.Taken``): none or
    #: one.
    taken: list[flow.Taken]


def _run(step, now, facts, owner, step_events, signals=()):
    """The ``runs.Run`` of ``step`` claimed at ``now`` by ``owner``, from
    what the claim read of it (``facts``, a ``_Wanted``), with the
    ``signals`` (rows) its view holds."""
    order, rows, kind = facts.order, facts.rows, facts.kind
    row = rows[step.step]
    return runs.Run(
        order_id=order.id, step=step.step, token=step.generation + 1,
        kind=kind, failures=row.failures, polls=row.polls,
        started_at=row.started_at or now, last_error=row.last_error,
        # An order that started later has its deadline counted from
        # its start, not from its creation.
        order_created_at=(order.not_before or order.created_at),
        order_meta=order.meta,
        order_priority=order.priority, workflow=facts.workflow,
        policy=facts.policy, steps=rows,
        subscribed=any(map(models.is_delivery, rows)),
        step_events=step_events,
        claimed_at=now, attempt=row.attempt + 1, worker=owner,
        project_id=order.project_id,
        request=values.request_ids_of(order), crashes=row.crashes,
        resources=(tuple(key.name for key in facts.need.keys)
                   if facts.need is not None else ()),
        resource_error=facts.need.error if facts.need else None,
        trace=(tracing.carrier(order.trace_context) if tracing.ENABLED
               else None),
        signals=tuple(signal.id for signal in signals))


def _view(order, workflow, steps, run, lease_extender, signals=()):
    """The ``OrderView`` a run of ``run.step`` is given, which extends
    its lease with ``lease_extender``, with the ``signals`` (rows) it
    sees.

    Its metadata is the order's with the outputs of its DONE steps merged
    in, in declaration order.
    """
    row = steps[run.step]
    return base.OrderView(
        id=order.id, type=order.type,
        meta=flow.meta_of(order, workflow, steps),
        attempt=row.failures, token=run.token, polls=row.polls,
        step=run.step,
        idempotency_key=base.idempotency_key(order.id, run.step),
        steps=types.MappingProxyType(
            {name: step.status for name, step in steps.items()}),
        lease_extender=lease_extender,
        signals=tuple(base.Signal(signal.signal_id, signal.name,
                                  signal.payload) for signal in signals))


def _seconds(step_policy):
    return datetime.timedelta(seconds=step_policy.timeout_seconds)


def _pause_candidates(wanted, refused):
    """``{index: pauses.Candidate}`` of the workflow steps of ``wanted``
    not ``refused`` already: those a pause may hold."""
    return {index: pauses.Candidate(
        facts.order.id, facts.order.type,
        tuple(key.name for key in facts.need.keys)
        if facts.need is not None else ())
        for index, facts in wanted.items()
        if facts.kind.runs_workflow and index not in refused}


def _waits_for(refusal):
    """What a refused step waits for, for the log."""
    if refusal.why is not None:
        return '%s; cast again at %s' % (refusal.why,
                                         refusal.retry_at.isoformat())
    if refusal.waiting_for is None:
        return 'over its rate, again at %s' % refusal.retry_at.isoformat()
    return 'no slot of %s free' % refusal.waiting_for


def _describe(row):
    if row is None:
        return 'gone'
    return '%s at generation %d' % (row.status, row.generation)
