"""Local continuations: the steps a result makes ready, claimed in the
transaction that writes it and run by the same worker, with no message.

Without them every ready step travels to the broker and back, and is
claimed again in a transaction of its own: a worker's profile put about
40 % of its time in oslo.messaging's receive path. When an apply
(``worker.steps.apply``) writes a result that makes further steps of the
same order ready (a workflow's next steps, a delivery its events woke),
the ``Continuer`` picks some of them and claims them with
``Claimer.claim_in`` in the apply's own transaction: the same generation
bump, lease, owner and resource slots as a claim of a message, so the
fencing of stale results, the recovery of a dead worker's steps and flow
control are those of any claim. Once the transaction committed, the
thread whose result made a step ready runs it (its own thread is free:
its step is over); any other picked step runs on a free step thread
reserved before the claim. What is not picked, or not claimed, is cast as
before, but a step the claim made wait for a resource key (parked) or
found stale.

Fairness: a continued step jumps ahead of the steps waiting in the
broker. So a worker continues none while steps wait in its intake
(``worker.intake.Room``), at most ``[worker] max_local_steps`` in a row
for one order, only steps of the topic it serves, and only on its free
threads: a worker never holds a step it cannot start at once.
"""

import dataclasses
import typing

from worker.db import models
from worker import values


class Continuation(typing.NamedTuple):
    """A step claimed by an apply, to run here."""

    step: values.StepRef
    #: Its ``runs.Run`` (``continued`` counted) and view, as a claim
    #: gives them.
    run: typing.Any
    view: typing.Any
    #: True if it holds a step thread of its own (reserved before its
    #: claim, released when it ends); False: the thread whose result made
    #: it ready runs it.
    reserved: bool


class _Pick(typing.NamedTuple):
    """A ready step picked to claim: the result (by index) it follows."""

    index: int
    step: values.StepRef
    reserved: bool
    #: The local continuations of its order in a row before it.
    chain: int


class Continuer:
    """Picks and claims the steps that results make ready.

    :param conf: the configuration (``[worker] max_local_steps``, read at
        each batch).
    :param claimer: the ``worker.steps.claim.Claimer`` of this worker.
    :param topic: the topic this worker serves; a step cast elsewhere is
        never continued here.
    :param topic_of: returns the topic a step is cast to
        (``rpcapi.WorkerAPI.topic``; None for ``[worker] topic``).
    :param free: the step threads' ``threading.Semaphore`` (one permit a
        free thread).
    :param intake: the ``worker.intake.Room`` of the steps received and
        not started, or None.
    :param observe: called with the number of steps continued.
    """

    def __init__(self, conf, claimer, topic, topic_of, free, intake=None,
                 observe=None):
        self._conf = conf
        self._claimer = claimer
        self._topic = topic
        self._topic_of = topic_of
        self._free = free
        self._intake = intake
        self.observe = observe or (lambda count: None)
        self._stopped = False

    def stop(self):
        """Continue nothing more (the service is stopping)."""
        self._stopped = True

    def claim(self, session, items, decided, woken, now):
        """Pick and claim, in the apply's transaction ``session`` at
        ``now``, the steps the results ``items`` made ready
        (their ``decided`` casts, and the steps ``woken``).

        :returns: a ``Claims``; its ``abandon`` if the transaction does
            not commit.
        """
        picks = self._pick(items, decided, woken)
        if not picks:
            return Claims(self, [], None)
        try:
            claimed = self._claimer.claim_in(
                session, [pick.step for pick in picks], now)
        except BaseException:
            self.release(picks)
            raise
        return Claims(self, picks, claimed)

    def _pick(self, items, decided, woken):
        limit = self._conf.worker.max_local_steps
        if self._stopped or not limit or (
                self._intake is not None and self._intake.taken):
            return []
        ready = {}
        for decision in decided:
            if decision is not None:
                for step in decision.casts:
                    ready.setdefault(step.order_id, []).append(step)
        for step in woken:
            ready.setdefault(step.order_id, []).append(step)
        # An order's chain is its longest among its results of the batch
        # (a delivery's result beside its workflow step's).
        chains = {}
        for run, _ in items:
            chains[run.order_id] = max(chains.get(run.order_id, 0),
                                       run.continued)
        picks = []
        for index, ((run, _), decision) in enumerate(zip(items, decided)):
            chain = chains[run.order_id]
            if decision is None or chain >= limit:
                continue
            steps = [step for step in ready.pop(run.order_id, ())
                     if self._serves(step)]
            # A workflow's own step first: the order's end waits for it,
            # not for its notifications.
            steps.sort(key=lambda step: models.is_delivery(step.step))
            for number, step in enumerate(steps):
                reserved = number > 0
                if reserved and not self._free.acquire(blocking=False):
                    break
                picks.append(_Pick(index, step, reserved, chain))
        return picks

    def report(self, claimed):
        """Log and count what a claim dropped or parked
        (``Claimer.report``)."""
        self._claimer.report(claimed)

    def _serves(self, step):
        topic = self._topic_of(step) or self._conf.worker.topic
        return topic == self._topic

    def release(self, picks):
        """Give back the threads reserved for ``picks``."""
        for pick in picks:
            if pick.reserved:
                self._free.release()


class Claims:
    """What a ``Continuer`` claimed in one apply's transaction."""

    def __init__(self, continuer, picks, claimed):
        self._continuer = continuer
        self._picks = picks
        self._claimed = claimed

    def abandon(self):
        """The transaction rolled back: give the reserved threads back."""
        self._continuer.release(self._picks)

    def settle(self, items):
        """Once committed: log what the claim dropped or parked, give back
        the threads of the steps not claimed.

        :returns: ``(continuations, taken)``: per result of ``items``, the
            ``Continuation`` list it hands over; and the ``(order_id,
            step)`` of the steps not to cast (claimed, parked or stale).
        """
        continuations = [[] for _ in items]
        if self._claimed is None:
            return continuations, set()
        self._continuer.report(self._claimed)
        taken = {(step.order_id, step.step)
                 for step, _ in self._claimed.dropped +
                 self._claimed.waiting}
        for pick, answer in zip(self._picks, self._claimed.answers):
            if answer is None:
                self._continuer.release([pick])
                continue
            run, view = answer
            run = dataclasses.replace(run, continued=pick.chain + 1)
            continuations[pick.index].append(
                Continuation(pick.step, run, view, pick.reserved))
            taken.add((pick.step.order_id, pick.step.step))
        count = sum(map(len, continuations))
        if count:
            self._continuer.observe(count)
        return continuations, taken
