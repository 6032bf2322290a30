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
makes the orders of the latest ``[scheduler] schedule_backfill_max_runs``
ticks at or before now (1 by default; of the latest one only unless its
overlap policy is ``allow``), and moves to the first tick after now
(``worker.common.ticks.due``): the ticks before those make none. Two
daemons that read one late tick at moments a tick apart may create the
orders of two distinct ticks, each once.

While the schedule's last order is open, a due tick follows the
schedule's overlap policy (``scheduler.overlap``). A ``buffer-one``
schedule holds its tick (``schedules.hold``); each look first creates the
orders of the held ticks whose open order has ended, so that a held run
comes before the tick after it, and looks again within
``RETRY_SECONDS`` while a tick is held. A cancelled previous order is
cancelled through ``worker.api`` as an operator's would be.

A schedule whose order is refused for good (its type is no longer
installed, its meta no longer valid, its type's admission limit reached)
is logged with its id and skipped to its next tick; one that fails
otherwise (the database) is logged and stays due for the next look.
Neither stops the other schedules.

A paused schedule (``OrderAPI.pause('schedule', id)``) is moved past its
due ticks without an order, and a tick it holds waits: an unpause does
not make up for the ticks missed while it was paused.
"""

import dataclasses
import time

from oslo_db import exception as db_exc
from oslo_log import log as logging

from scheduler import overlap
from worker.api import schedules as schedule_api
from worker.common import ticks
from worker.db import models

LOG = logging.getLogger(__name__)

#: Schedules handled per look at most; a full batch looks again at once.
BATCH_SIZE = 100
#: Seconds to the next look after one that left a schedule due (a create
#: that failed on the database): not a busy loop on a lasting failure.
RETRY_SECONDS = 5.0
# What ``Ticks._create`` returns for an order it could not create.
_FAILED = object()


@dataclasses.dataclass
class LookResult:
    """What one look at the schedules did."""

    #: Ticks whose order this daemon created or found, and moved on.
    created: int = 0
    #: Ticks refused and skipped.
    skipped: int = 0
    #: Ticks left due after a failure.
    failed: int = 0
    #: Ticks that made no order by their overlap policy (``skip``) or
    #: because their schedule is paused.
    passed_over: int = 0
    #: Ticks held by ``buffer-one``, and held ticks still waiting.
    held: int = 0
    still_held: int = 0
    #: Open orders cancelled by ``cancel-previous``.
    cancelled: int = 0
    #: Seconds to the next look.
    next_look_in: float = 0.0


class Ticks:
    """Creates the orders of the schedules' ticks that are due.

    :param schedules: a ``worker.schedule_api.ScheduleAPI`` on the
        daemon's database and RPC client.
    :param stop_event: set when the daemon stops: the look stops before
        its next schedule.
    :param paused: a callable that takes a schedule (a row) and returns
        True if it is paused: its due ticks make no order and it moves
        on to its next tick, and a tick it holds waits. None: the pauses
        recorded in the database (``OrderAPI.pause('schedule', id)``).
    """

    def __init__(self, conf, database, schedules, stop_event, paused=None):
        self._conf = conf
        self._database = database
        self._schedules = schedules
        self._stop_event = stop_event
        self._paused = paused or self._paused_in_database

    def run_once(self, now):
        """Create the orders of the ticks due at ``now`` (the database's
        time); returns a ``LookResult``."""
        started = time.monotonic()
        result = LookResult()
        repository = self._database.repositories.schedules
        self._release_held(now, result)
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
        if result.created or result.skipped or result.failed or \
                result.passed_over or result.held:
            LOG.info('Schedules: %d ticks made their orders, %d skipped, %d '
                     'failed, %d passed over, %d held, in %.3fs',
                     result.created, result.skipped, result.failed,
                     result.passed_over, result.held, elapsed)
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
        if result.still_held:
            # A held tick fires when its open order ends: look again soon.
            longest = min(longest, RETRY_SECONDS)
        return min(max(wait, 0.0), longest)

    def _tick(self, schedule, now, result):
        """Create the orders of one schedule's due ticks, as its overlap
        policy says, and move it on."""
        plan = self._plan(schedule, now, result)
        if plan is None:
            return
        if self._paused(schedule):
            LOG.info('Schedule %s is paused: tick %s makes no order',
                     schedule.id, plan.tick.isoformat())
            result.passed_over += 1
            self._advance(schedule, plan, [], now, result)
            return
        # Under ``allow`` the last order's status changes nothing: not
        # read.
        looks = overlap.looks_at_previous(schedule.overlap)
        decision = overlap.decide(
            schedule.overlap, looks and self._open(schedule.last_order_id))
        if decision is overlap.Decision.SKIP:
            LOG.info('Schedule %s: tick %s skipped, order %s is still open',
                     schedule.id, plan.tick.isoformat(),
                     schedule.last_order_id)
            result.passed_over += 1
            self._advance(schedule, plan, [], now, result)
            return
        if decision is overlap.Decision.HOLD:
            self._hold(schedule, plan, now, result)
            return
        if decision is overlap.Decision.CANCEL_AND_CREATE:
            self._cancel_previous(schedule, plan, result)
        self._create_and_advance(schedule, plan, now, result)

    def _plan(self, schedule, now, result):
        """The schedule's ``ticks.Due``, or None if it cannot tick."""
        backfill = self._conf.scheduler.schedule_backfill_max_runs
        if not overlap.backfills(schedule.overlap):
            backfill = 1
        try:
            return ticks.due(ticks.Spec.of(schedule.every_seconds,
                                           schedule.cron, schedule.timezone),
                             schedule.next_tick_at, now, backfill)
        except ticks.InvalidSchedule as exc:
            LOG.error('Schedule %s cannot tick: %s', schedule.id, exc)
            result.failed += 1
            return None

    def _create_and_advance(self, schedule, plan, now, result):
        """Create the order of each of the plan's ticks, then move on."""
        made = []
        for tick in plan.ticks:
            order_id = self._create(schedule, tick, result)
            if order_id is _FAILED:
                return
            if order_id is not None:
                made.append((tick, order_id))
        self._advance(schedule, plan, made, now, result)

    def _create(self, schedule, tick, result):
        """The id of the order of ``tick``; None if it was refused (the
        tick is skipped), ``_FAILED`` if it could not be created (the
        tick stays for the next look)."""
        try:
            return self._schedules.create_order(schedule, tick).id
        except schedule_api.OrderAPIError as exc:
            # NOTE(admission): worker.api.TooManyPendingOrders ([order_type]
            # max_pending) is an OrderAPIError too: that tick is skipped
            # like any refusal, and the next tick tries again.
            LOG.warning('Schedule %s: the order of tick %s was refused and '
                        'the tick skipped: %s', schedule.id,
                        tick.isoformat(), exc)
            result.skipped += 1
            return None
        except Exception:
            LOG.exception('Schedule %s: could not create the order of tick '
                          '%s; the next look tries again', schedule.id,
                          tick.isoformat())
            result.failed += 1
            return _FAILED

    def _open(self, order_id):
        """True if the order ``order_id`` exists and has not ended."""
        if order_id is None:
            return False
        with self._database.reader() as session, session.begin():
            status = self._database.repositories.orders.status_of(
                session, order_id)
        return status is not None and status not in models.TERMINAL_STATUSES

    def _cancel_previous(self, schedule, plan, result):
        """Cancel the schedule's open order for ``plan``'s tick; an order
        that ended meanwhile is left as it is."""
        try:
            self._schedules.cancel_order(
                schedule, schedule.last_order_id,
                'cancelled by schedule %s: tick %s came while it was open '
                '(overlap cancel-previous)' % (schedule.id,
                                               plan.tick.isoformat()))
        except schedule_api.OrderAPIError as exc:
            LOG.info('Schedule %s: order %s was not cancelled: %s',
                     schedule.id, schedule.last_order_id, exc)
            return
        result.cancelled += 1
        LOG.info('Schedule %s: order %s cancelled for tick %s (overlap '
                 'cancel-previous)', schedule.id, schedule.last_order_id,
                 plan.tick.isoformat())

    def _hold(self, schedule, plan, now, result):
        """Hold ``plan``'s tick until the open order ends, and move on."""
        if self._move(schedule, result, lambda session, repository:
                      repository.hold(session, schedule.id,
                                      schedule.next_tick_at, plan.following,
                                      now, plan.tick)):
            result.held += 1
            result.still_held += 1
            LOG.info('Schedule %s: tick %s held until order %s ends '
                     '(overlap buffer-one)', schedule.id,
                     plan.tick.isoformat(), schedule.last_order_id)

    def _release_held(self, now, result):
        """Create the orders of the held ticks whose open order ended."""
        repository = self._database.repositories.schedules
        with self._database.reader() as session, session.begin():
            held = repository.held(session, BATCH_SIZE)
        for schedule in held:
            if self._stop_event.is_set():
                return
            if self._paused(schedule) or self._open(schedule.last_order_id):
                result.still_held += 1
                continue
            tick = schedule.buffered_tick_at
            order_id = self._create(schedule, tick, result)
            if order_id is _FAILED:
                result.still_held += 1
                continue
            with self._database.session() as session, session.begin():
                released = repository.release_held(session, schedule.id,
                                                   tick, now, order_id)
            if released and order_id is not None:
                result.created += 1
                LOG.info('Schedule %s: order %s for held tick %s',
                         schedule.id, order_id, tick.isoformat())

    def _advance(self, schedule, plan, made, now, result):
        """Move the schedule on past ``plan``, recording the last of the
        ``(tick, order id)`` pairs ``made`` (None if empty)."""
        tick, order_id = made[-1] if made else (None, None)
        if self._move(schedule, result, lambda session, repository:
                      repository.advance(session, schedule.id,
                                         schedule.next_tick_at,
                                         plan.following, now, tick,
                                         order_id)) and made:
            result.created += len(made)
            LOG.info('Schedule %s: order %s for tick %s%s; next tick %s',
                     schedule.id, ', '.join(order for _, order in made),
                     ', '.join(tick.isoformat() for tick, _ in made),
                     ' (%d missed ticks before %s made no order of their '
                     'own)' % (plan.missed, 'it' if len(made) == 1
                               else 'them') if plan.missed else '',
                     plan.following.isoformat())

    def _move(self, schedule, result, write):
        """Run ``write(session, repository)``, a conditional move of the
        schedule; its answer, False on a lost race or a failure."""
        try:
            with self._database.session() as session, session.begin():
                return write(session,
                             self._database.repositories.schedules)
        except db_exc.DBDeadlock:
            # Another daemon moved it at the same moment (on Galera, its
            # write set certified first): a lost race, not a failure.
            LOG.debug('Schedule %s was moved on by another daemon',
                      schedule.id)
            return False
        except Exception:
            LOG.exception('Schedule %s: could not move to its next tick; '
                          'the next look finds the order of this one',
                          schedule.id)
            result.failed += 1
            return False

    def _paused_in_database(self, schedule):
        """True if the schedule is paused: one read of the pauses' unique
        key, made only for a schedule with a tick due or held."""
        with self._database.reader() as session, session.begin():
            return bool(self._database.repositories.pauses.listed(
                session, 'schedule', [schedule.id]))
