"""One clock for every host: the database server's.

Every time that more than one process compares (due rows, heartbeats,
lock ages, dispatch deadlines, leases) is written and read by processes on
different hosts. Rather than trust each host's clock, each process
measures the offset of its clock from the database server's at every
heartbeat, as NTP does (read the server's time between two readings of
its own, assume the server read it half-way) and adds it to its own clock
(``DatabaseClock.now``). Every timestamp it writes and every cut-off it
compares against is then in the database's time.

Why an offset rather than the server's ``now()`` in every statement: the
code already takes "now" as one value per pass or per step (a pass's
``liveness.Cutoffs``, a step's lease), which the unit tests set; SQL
expressions would differ per dialect in dozens of statements and leave
the in-memory store of the unit tests behind. The price is the error of
one measurement: half its round trip (logged when it exceeds a second),
and whatever the host's clock drifts between two heartbeats (well under
a millisecond for a quartz clock, NTP or not; a step made by an operator
is caught at the next heartbeat).

A process whose clock is off by more than ``[DEFAULT]
max_clock_offset_seconds`` logs an error at each heartbeat (its clock is
corrected regardless, but its host needs attention), and a retry daemon
that far off takes no decision on the liveness of others: a measurement
gone stale could make it take back a live owner's steps.

``BARBICAN_RETRY_TEST_CLOCK_SKEW_SECONDS`` shifts this process's own
clock by that many seconds: the functional tests run processes whose
clocks are off that way (a tool such as libfaketime makes Python's timed
waits hang). It is for tests only.
"""

import datetime
import os
import time

from oslo_log import log as logging
from oslo_utils import timeutils

LOG = logging.getLogger(__name__)

SKEW_VARIABLE = 'BARBICAN_RETRY_TEST_CLOCK_SKEW_SECONDS'
# A measurement whose round trip took longer than this is logged: its
# error (half of it) is then large enough to matter for liveness.
_SLOW_ROUND_TRIP = 1.0


def local_utcnow():
    """This host's UTC time, naive (shifted by the test variable, if set)."""
    now = timeutils.utcnow()
    skew = os.environ.get(SKEW_VARIABLE)
    if skew:
        now += datetime.timedelta(seconds=float(skew))
    return now


class DatabaseClock:
    """The database server's time, from this host's clock and an offset.

    :param database: a ``worker.db.session.Database`` (or the in-memory
        one): its ``repositories.services.database_time`` is read.
    :param max_offset: ``[DEFAULT] max_clock_offset_seconds``.
    :param judges_liveness: a retry daemon's clock: its error says that
        the daemon holds back its judgments while the clock is off.
    :param local: this host's clock (naive UTC); tests pass their own.
    """

    def __init__(self, database, max_offset, judges_liveness=False,
                 local=local_utcnow, monotonic=time.monotonic):
        self._database = database
        self._max_offset = max_offset
        self._judges_liveness = judges_liveness
        self._local = local
        self._monotonic = monotonic
        # The database's clock minus this host's, as last measured; None
        # before the first measurement. Replaced whole (one reference
        # assignment), so readers in other threads need no lock.
        self._offset = None

    @property
    def offset_seconds(self):
        """The last measured offset in seconds; None before the first."""
        offset = self._offset
        return None if offset is None else offset.total_seconds()

    def now(self):
        """The database server's UTC time now (naive), as best known."""
        return self._local() + (self._offset or datetime.timedelta(0))

    @property
    def too_far(self):
        """True if the last measured offset is beyond the bound."""
        offset = self.offset_seconds
        return offset is not None and abs(offset) > self._max_offset

    @property
    def trusted(self):
        """True once measured, and within the bound.

        Until its first heartbeat reaches the database (a database away at
        start), a process does not know its offset: a retry daemon judges
        no one until then.
        """
        return self.offset_seconds is not None and not self.too_far

    def measure(self, session):
        """Measure the offset in ``session`` (one query); return it.

        Logs an error when it is beyond ``max_offset``: called at every
        heartbeat, so the error repeats while the clock is off.
        """
        started = self._monotonic()
        before = self._local()
        server = self._database.repositories.services.database_time(session)
        round_trip = self._monotonic() - started
        midpoint = before + datetime.timedelta(seconds=round_trip / 2)
        self._offset = server - midpoint
        if round_trip > _SLOW_ROUND_TRIP:
            LOG.warning('Clock offset measured over a %.1fs round trip to '
                        'the database: it may be off by up to %.1fs',
                        round_trip, round_trip / 2)
        if self.too_far:
            LOG.error('This host\'s clock is %.1fs %s the database '
                      'server\'s, beyond max_clock_offset_seconds (%ss): '
                      'times are corrected by it, but fix the host\'s time '
                      'service (NTP)%s', abs(self.offset_seconds),
                      'behind' if self.offset_seconds > 0 else 'ahead of',
                      self._max_offset,
                      '; until then this retry daemon takes back no step '
                      'and clears no lock' if self._judges_liveness else '')
        return self.offset_seconds


def measured(database, max_offset):
    """A ``DatabaseClock`` measured once, for a command that runs briefly.
    """
    database_clock = DatabaseClock(database, max_offset)
    with database.reader() as session, session.begin():
        database_clock.measure(session)
    return database_clock
