"""Recovery: take back the steps whose dispatch, owner or lease was lost.

oslo.messaging acknowledges a message before it runs it, so a worker
killed in the middle of a step loses its cast for good, and a cast can be
lost on its way. The database tells: a step claimed by a process that
stopped heartbeating, dispatched and not taken up within
``dispatch_deadline_seconds``, or running past the lease its policy gave
it (or that it extended) by more than ``[worker] lease_grace_seconds`` (a
hung call on a live worker; a run about to finish has the grace to write
its result, instead of running beside its own copy). Each one found gets
a new generation (the old token becomes stale) and a retry row due now,
of its order's priority and with its request ids, which the same pass
then casts like any other.

A lease that ended counts as a failed run, and an owner that died as a
crash of the step (``order_steps.crashes``): the worker that runs the
step next applies the step's policy to the first, and fails a step that
crashed ``[worker] max_step_crashes`` times in a row (a poison step)
instead of running it again (``worker.steps.workflow``).

Every step that was running on a process that died counts a crash, the
poison step's and its innocent neighbours' alike. A run that ends (any
result) clears its step's crashes, so a neighbour that runs once to its
end elsewhere starts again at 0. What keeps a neighbour from dying beside
the poison step again and again: a crashed step's retry row is due at a
random moment within ``report_interval`` per crash, so the steps of one
dead process reach the workers at different moments, mostly in different
passes; and a step that crashed runs alone in the process that claims it
next (``worker.steps.isolation``).

A step taken back from its owner ends that owner's run: its row in the
order's history is ``taken back``, with why.

A step taken back frees the resource slots its run held (by the old
token), and so does the sweep of each recovery: a slot whose holder no
longer runs (its step cancelled or resumed meanwhile, its run's result
written by a worker that died before it could free it) is deleted. For
each slot freed, the oldest step waiting for its key
(``order_retry_tasks.waiting_for``) is made due now, and cast by the same
pass.
"""

import collections
import dataclasses
import datetime
import random

from oslo_log import log as logging

from scheduler import liveness
from worker import context
from worker.db import models
from worker.db import rows
from worker.db import session as db_session
from worker import rpcapi
from worker import values

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Recovered:
    """What one recovery did."""

    #: Steps taken back and given a retry row due now.
    steps: int
    #: Services removed because they stopped heartbeating.
    dead_services: tuple


class Recovery:
    """Finds and takes back lost steps, once per ``report_interval``.

    A process is declared dead ``service_down_time`` after its last
    heartbeat, and heartbeats come every ``report_interval``: looking more
    often than that finds nothing new.
    """

    def __init__(self, conf, database, pass_lock, randomness=random):
        self._conf = conf
        self._randomness = randomness
        self._database = database
        self._repositories = database.repositories
        self._pass_lock = pass_lock
        self._done_at = None

    def due(self, now):
        """True if this pass should look for lost orders."""
        interval = datetime.timedelta(seconds=self._conf.report_interval)
        return (self._done_at is None or
                now - self._done_at >= interval or
                now < self._done_at)  # the clock went back

    def needed(self, session, cutoffs):
        """In a read-only look: True if this pass must take steps back.

        When recovery is due and nothing is lost, that counts as done.
        """
        if not self.due(cutoffs.now):
            return False
        if self._lost(session, cutoffs, 1) or \
                self._repositories.services.any_dead(
                    session, cutoffs.alive_since) or \
                self._repositories.resources.orphans(session, 1):
            return True
        self._done_at = cutoffs.now
        return False

    def run(self, owner_token, cutoffs):
        """Take lost steps back under our lock; returns ``Recovered``.

        Returns None, changing nothing, if the lock is no longer ours.
        """
        written = self._take_back_all(owner_token, cutoffs)
        if written is None:
            return None
        taken, dead, all_found = written
        if all_found:
            # With more lost than one batch, the next pass goes on.
            self._done_at = cutoffs.now
        # Logged after the commit: a transaction run again logs once.
        for row, why, ids in taken:
            LOG.warning('Step %s of order %s taken back and dispatched '
                        'again: %s', row.step, row.order_id, why,
                        context=context.for_ids(ids))
        for name in dead:
            LOG.warning('Service %s stopped heartbeating; removed', name)
        return Recovered(steps=len(taken), dead_services=tuple(dead))

    @db_session.retry_lost_race
    def _take_back_all(self, owner_token, cutoffs):
        """One transaction: ``(taken, dead, all_found)``, or None if the
        lock is no longer ours. ``taken``: ``(row, why, ids)`` of each
        step taken back (``row`` its ``steps.RecoveryRow``, ``ids`` its
        order's ``RequestIds`` or None)."""
        repositories = self._repositories
        with self._database.session() as session, session.begin():
            if not self._pass_lock.renew(session, owner_token, cutoffs.now):
                return None
            limit = self._conf.scheduler.batch_size
            lost = self._lost(session, cutoffs, limit)
            # One read of the orders for all: the steps found do not
            # carry their order's priority and request ids.
            origins = repositories.orders.retry_origins(
                session, {row.order_id for row, _ in lost})
            taken = []
            for found in lost:
                origin = origins.get(found[0].order_id)
                ids = _ids(origin)
                why = self._take_back(session, found, cutoffs.now,
                                      origin.priority if origin else 0, ids)
                if why is not None:
                    taken.append((found[0], why, ids))
            repositories.history.add_many(session,
                                          _runs_ended(taken, cutoffs.now))
            self._free_slots(session, taken, cutoffs.now, limit)
            dead = repositories.services.delete_dead(session,
                                                     cutoffs.alive_since)
        return taken, dead, len(lost) < limit

    def _free_slots(self, session, taken, now, limit):
        """Free the slots of the runs ``taken`` back, and up to ``limit``
        whose holder no longer runs; make as many waiting steps due now.
        """
        store = self._repositories.resources
        freed = collections.Counter(store.release(session, [
            (row.order_id, row.step, row.generation)
            for row, _, _ in taken]))
        freed.update(store.sweep(session, limit))
        if freed:
            woken = store.make_due(session, freed, now)
            LOG.info('Freed %d resource slot(s) of runs taken back or no '
                     'longer running; %d waiting step(s) due now',
                     sum(freed.values()), woken)

    def _lost(self, session, cutoffs, limit):
        """Steps whose dispatch, owner or lease was lost, up to ``limit``
        each, as ``(row, why)``."""
        steps = self._repositories.steps
        live = self._repositories.services.live_names(session,
                                                      cutoffs.alive_since)
        dead_owners = liveness.dead_owners(steps.owners(session), live)
        lost = [(row, None) for row in
                steps.lost_dispatches(session, cutoffs.dispatch_lost_before,
                                      limit) +
                steps.owned_by(session, dead_owners, limit)]
        taken = {(row.order_id, row.step) for row, _ in lost}
        lost.extend((row, 'its lease ended on %s' % row.owner)
                    for row in steps.expired_leases(
                        session, cutoffs.lease_lost_before, limit)
                    if (row.order_id, row.step) not in taken)
        return lost

    def _take_back(self, session, lost, now, priority, ids):
        """Give a lost step a new token and a retry row due ``now`` (a
        crashed one a moment later: ``_spread``), of its order's
        ``priority`` and request ``ids``.

        Returns why it was lost, or None if it was not taken back (it
        moved on meanwhile; an order gone took its steps with it).
        """
        row, lease_ended = lost
        # A step claimed by a process that died (rather than one whose
        # lease ended on a live one, or a dispatch nobody took up).
        crashed = not lease_ended and row.owner is not None
        if not self._repositories.steps.take_back(
                session, row.order_id, row.step, row.generation, now,
                failed=lease_ended, crashed=crashed):
            return None
        failures = row.failures + (1 if lease_ended else 0)
        args, kwargs = rpcapi.retry_arguments(values.StepRef(
            row.step, row.order_id, row.generation + 1, ids))
        self._repositories.retry_tasks.add_many(session, [dict(
            order_id=row.order_id, retry_task=row.step,
            retry_at=now + self._spread(row.crashes + 1 if crashed else 0),
            args=args, kwargs=kwargs, retry_count=failures, now=now,
            priority=priority)])
        if crashed:
            return ('its owner %s stopped heartbeating while running it '
                    '(crash %d of this step)' % (row.owner, row.crashes + 1))
        return lease_ended or 'no worker took up its dispatch'

    def _spread(self, crashes):
        """How long after now a step that crashed ``crashes`` times in a
        row is dispatched again: at random, within ``report_interval``
        per crash (0 for a step that did not crash)."""
        return datetime.timedelta(seconds=self._randomness.uniform(
            0, self._conf.report_interval * crashes))


def _runs_ended(taken, now):
    """The history rows (``taken back``) of the runs that the steps
    ``taken`` had: those that had an owner (a lost dispatch had no run).
    """
    return [rows.StepRun(
        row.order_id, row.step, row.generation, row.attempt, row.owner,
        row.claimed_at, now, models.RUN_TAKEN_BACK, why)
        for row, why, _ in taken if row.owner is not None]


def _ids(origin):
    """The ``RequestIds`` of an order's ``RetryOrigin`` (None if none)."""
    if origin is None:
        return None
    return values.request_ids_of(origin)
