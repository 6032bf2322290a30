"""Periodic orders: the retry daemons create the order of each tick of
each schedule (``worker.schedule_api``).

Every retry daemon runs ``Ticks.run_once`` on a timer of its own, in its
own thread, and wakes at the next tick of any schedule (and at least
every ``[scheduler] schedule_check_seconds``, to see new schedules). Not
in the retry pass: a pass runs once per period / K and takes the pass
lock only when rows are due, so its ticks would be up to a period late;
and not under a lock of their own: a SIGKILLed holder would leave every
tick to wait for its lock to be judged stale, a gap while other daemons
live. No lock is needed for the ticks to be exactly once:

- a tick's order has the idempotency key ``schedule:<id>:<tick>`` in the
  schedule's project, and the unique (project_id, idempotency_key) index
  of the orders lets one insert of it commit, whatever the daemons do;
  ``worker.api``'s create returns the existing order to every other
  (``OrderAPI.create``'s read-back, a lost race included);
- the daemon then moves the schedule's ``next_tick_at`` on by an UPDATE
  conditional on the tick it read (``schedules.advance``): of the
  daemons that read one tick, one moves it; a daemon that dies between
  the order's commit and that UPDATE leaves the tick due, and the next
  look finds its order by the key and moves on.

A schedule whose ``next_tick_at`` is long past (every daemon was down)
makes one order, for the latest tick at or before now, and moves to the
first tick after now (``worker.common.ticks.due``): a tick missed while
every daemon was down is created once. Two daemons that read one late
tick at moments a tick apart may create the orders of two distinct ticks,
each once.

A schedule whose order is refused for good (its type is no longer
installed, its meta no longer valid, its type's admission limit reached)
is logged with its id and skipped to its next tick; one that fails
otherwise (the database) is logged and stays due for the next look.
Neither stops the other schedules.
"""

import dataclasses
import time

from oslo_db import exception as db_exc
from oslo_log import log as logging

from worker.api import schedules as schedule_api
from worker.common import ticks

LOG = logging.getLogger(__name__)

#: Schedules handled per look at most; a full batch looks again at once.
BATCH_SIZE = 100
#: Seconds to the next look after one that left a schedule due (a create
#: that failed on the database): not a busy loop on a lasting failure.
RETRY_SECONDS = 5.0


@dataclasses.dataclass
class LookResult:
    """What one look at the schedules did."""

    #: Ticks whose order this daemon created or found, and moved on.
    created: int = 0
    #: Ticks refused and skipped.
    skipped: int = 0
    #: Ticks left due after a failure.
    failed: int = 0
    #: Seconds to the next look.
    next_look_in: float = 0.0


class Ticks:
    """Creates the orders of the schedules' ticks that are due.

    :param schedules: a ``worker.schedule_api.ScheduleAPI`` on the
        daemon's database and RPC client.
    :param stop_event: set when the daemon stops: the look stops before
        its next schedule.
    """

    def __init__(self, conf, database, schedules, stop_event):
        self._conf = conf
        self._database = database
        self._schedules = schedules
        self._stop_event = stop_event

    def run_once(self, now):
        """Create the orders of the ticks due at ``now`` (the database's
        time); returns a ``LookResult``."""
        started = time.monotonic()
        result = LookResult()
        repository = self._database.repositories.schedules
        with self._database.reader() as session, session.begin():
            due = repository.due(session, now, BATCH_SIZE)
        for schedule in due:
            if self._stop_event.is_set():
                break
            self._tick(schedule, now, result)
        elapsed = time.monotonic() - started
        with self._database.reader() as session, session.begin():
            upcoming = repository.next_tick_at(session)
        result.next_look_in = self._wait(due, upcoming, now, elapsed, result)
        if result.created or result.skipped or result.failed:
            LOG.info('Schedules: %d ticks made their orders, %d skipped, %d '
                     'failed, in %.3fs', result.created, result.skipped,
                     result.failed, elapsed)
        return result

    def _wait(self, due, upcoming, now, elapsed, result):
        """Seconds to the next look."""
        longest = float(self._conf.scheduler.schedule_check_seconds)
        if len(due) == BATCH_SIZE and not result.failed:
            return 0.0
        if upcoming is None:
            return longest
        wait = (upcoming - now).total_seconds() - elapsed
        if wait <= 0 and result.failed:
            return RETRY_SECONDS
        return min(max(wait, 0.0), longest)

    def _tick(self, schedule, now, result):
        """Create the order of one schedule's due tick and move it on."""
        try:
            plan = ticks.due(ticks.Spec.of(schedule.every_seconds,
                                           schedule.cron),
                             schedule.next_tick_at, now)
        except ticks.InvalidSchedule as exc:
            LOG.error('Schedule %s cannot tick: %s', schedule.id, exc)
            result.failed += 1
            return
        order_id = None
        try:
            order_id = self._schedules.create_order(schedule, plan.tick).id
        except schedule_api.OrderAPIError as exc:
            # NOTE(admission): worker.api.TooManyPendingOrders ([order_type]
            # max_pending) is an OrderAPIError too: that tick is skipped
            # like any refusal, and the next tick tries again.
            LOG.warning('Schedule %s: the order of tick %s was refused and '
                        'the tick skipped: %s', schedule.id,
                        plan.tick.isoformat(), exc)
            result.skipped += 1
        except Exception:
            LOG.exception('Schedule %s: could not create the order of tick '
                          '%s; the next look tries again', schedule.id,
                          plan.tick.isoformat())
            result.failed += 1
            return
        self._advance(schedule, plan, order_id, now, result)

    def _advance(self, schedule, plan, order_id, now, result):
        try:
            with self._database.session() as session, session.begin():
                moved = self._database.repositories.schedules.advance(
                    session, schedule.id, schedule.next_tick_at,
                    plan.following, now, plan.tick, order_id)
        except db_exc.DBDeadlock:
            # Another daemon moved it at the same moment (on Galera, its
            # write set certified first): a lost race, not a failure.
            LOG.debug('Schedule %s was moved on by another daemon',
                      schedule.id)
            return
        except Exception:
            LOG.exception('Schedule %s: could not move to its next tick; '
                          'the next look finds the order of this one',
                          schedule.id)
            result.failed += 1
            return
        if moved and order_id is not None:
            result.created += 1
            LOG.info('Schedule %s: order %s for tick %s%s; next tick %s',
                     schedule.id, order_id, plan.tick.isoformat(),
                     ' (%d missed ticks before it made no order of their '
                     'own)' % plan.missed if plan.missed else '',
                     plan.following.isoformat())
