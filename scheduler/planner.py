"""When this daemon passes next, and the record operators read of it.

The slot arithmetic is ``scheduler.slots``; this module applies it to the
live daemons read from the heartbeats, wakes sooner for a row that falls
due before the slot, and writes when the daemon passed and will pass
(``retry explain`` and ``service list`` read it).
"""

import dataclasses
import datetime
import random

from oslo_config import cfg
from oslo_log import log as logging
from oslo_utils import timeutils

from scheduler import liveness
from scheduler import slots
from worker.db import models
from worker.db import repositories

LOG = logging.getLogger(__name__)

_EPOCH = datetime.datetime(1970, 1, 1)


@dataclasses.dataclass(frozen=True)
class NextPass:
    """The plan of this daemon's next pass."""

    #: Seconds from now (the end of the pass just run) to the next pass.
    delay: float
    #: Whether this daemon is among the live ones (its heartbeat row
    #: exists and is fresh).
    listed: bool


class Planner:
    """Plans one daemon's passes.

    :param name: the daemon's service name (``pid@host``), its rank among
        the live daemons.
    """

    def __init__(self, conf: cfg.ConfigOpts,
                 database: repositories.Database, name: str) -> None:
        self._conf = conf
        self._database = database
        self._repositories = database.repositories
        self._name = name
        self._recorded_at: datetime.datetime | None = None

    def plan(self, session: repositories.Session, cutoffs: liveness.Cutoffs,
             elapsed: float | None = None) -> NextPass:
        """Plan this daemon's next pass; returns a ``NextPass``.

        Its slot of the period (see ``scheduler.slots``), or sooner when a
        row waiting now falls due before it; but not sooner than
        ``min_pass_gap_seconds`` after the start of the pass that just ran.

        :param cutoffs: the ``Cutoffs`` of the pass that just ran, or of
            the present when none did (``elapsed`` None).
        :param elapsed: seconds that pass ran.
        """
        group = self._conf.scheduler
        started = cutoffs.now
        live = self._repositories.services.live_names(
            session, cutoffs.alive_since, kind=models.SCHEDULER)
        rank, count = slots.rank_of(self._name, live)
        delay = slots.delay_to_slot(
            timeutils.delta_seconds(_EPOCH, started),
            group.schedule_period_seconds, rank, count, group.schedule_jitter,
            elapsed=elapsed or 0.0)
        # Rows due before ``started`` and left over by the pass (a failed
        # cast, max_pass_seconds) wait for the slot.
        upcoming = self._repositories.retry_tasks.next_due_after(session,
                                                                 started)
        if upcoming is not None:
            if elapsed is not None:
                upcoming = max(upcoming, started + datetime.timedelta(
                    seconds=group.min_pass_gap_seconds))
            wake = (upcoming - started).total_seconds() - (elapsed or 0.0)
            delay = min(delay, max(0.0, wake))
        return NextPass(delay=delay, listed=self._name in live)

    def first_delay(self, now: datetime.datetime) -> float:
        """Seconds to the next pass, planned outside a pass (at start, on
        reload)."""
        try:
            with self._database.reader() as session, session.begin():
                return self.plan(
                    session, liveness.Cutoffs.at(now, self._conf)).delay
        except Exception as exc:
            # Without the database there is nothing to pass over either.
            LOG.warning('Could not plan the next pass (%s); it comes at a '
                        'random point of the period', exc)
            # Timing, not a secret: any generator will do.
            return random.uniform(  # nosec B311
                0, self._conf.scheduler.schedule_period_seconds)

    def record(self, next_pass: NextPass, worked: bool,
               started: datetime.datetime, ended: datetime.datetime) -> None:
        """Write when this daemon passed and will pass, for operators.

        After a pass that did work, and otherwise once per
        ``report_interval``: an idle pass stays a read. Not at all while
        the daemon has no live row of its own to write it in (its first
        heartbeat is not written yet, or a test runs passes without one).

        :param next_pass: the ``NextPass`` planned at the end of the pass.
        :param ended: when the pass ended.
        """
        if not next_pass.listed or (not worked and
                                    self._recorded_recently(ended)):
            return
        next_pass_at = ended + datetime.timedelta(seconds=next_pass.delay)
        with self._database.session() as session, session.begin():
            self._repositories.services.record_pass(
                session, self._name, started, next_pass_at)
        self._recorded_at = ended

    def _recorded_recently(self, now: datetime.datetime) -> bool:
        if self._recorded_at is None:
            return False
        interval = datetime.timedelta(seconds=self._conf.report_interval)
        return self._recorded_at <= now < self._recorded_at + interval
