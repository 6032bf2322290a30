"""The retry daemons' own purge: ``[database] retention_days``.

Every retry daemon runs ``Retention.run_once`` on a timer of its own, in
its own thread: a purge of a long backlog may take minutes, and the
retry passes go on beside it at their own pace (they wait at most for
one batch's transaction on a row both touch; on SQLite, for the write
lock of one batch). A pass between the batches of a purge would instead
delay every due retry by the purge's length, or need its length bounded
and its work cut in slices: a thread of its own is the simpler bound.

One purge at a time, and at most one per ``[database]
purge_interval_seconds`` across every daemon: the ``EntityLock`` row
named OrderPurge (``models.ORDER_PURGE_LOCK``) is kept when a purge ends,
and its ``created_at`` records when the last purge last made progress. A
daemon takes the row (inserts it, or takes it over by a conditional
UPDATE) only when it is older than the interval; the purge renews it by
its owner token at every batch, and once more at its end. A purge whose
row was taken over (its daemon was too slow, or thought dead) stops at
its next batch. A daemon that dies mid-purge leaves the row to be taken
over one interval after its last batch.
"""

import datetime
import uuid

from oslo_db import exception as db_exc
from oslo_log import log as logging

from scheduler import purge
from worker.db import models

LOG = logging.getLogger(__name__)

LOCK = models.ORDER_PURGE_LOCK

#: Seconds between two looks at the OrderPurge row, at most: a purge
#: starts at most this late after the interval ended.
MAX_CHECK_SECONDS = 60.0
#: Looks per interval, at least: a short interval (a test's) is not
#: overshot by a whole interval.
_CHECKS_PER_INTERVAL = 4


class Retention:
    """Purges old finished orders when ``[database] retention_days`` is
    set, and it is this daemon's turn.

    :param holder_name: this daemon's service name, recorded in the lock.
    :param clock: returns "now" in the database's time (naive UTC).
    :param stop_event: set when the daemon stops: the purge stops before
        its next batch.
    """

    def __init__(self, conf, database, holder_name, clock, stop_event):
        self._conf = conf
        self._database = database
        self._holder_name = holder_name
        self._clock = clock
        self._stop_event = stop_event

    def next_check(self):
        """Seconds to the next ``run_once``."""
        return min(self._conf.database.purge_interval_seconds /
                   _CHECKS_PER_INTERVAL, MAX_CHECK_SECONDS)

    def run_once(self, now):
        """Purge if retention is set and no purge ran within the interval.

        Returns the ``rows.PurgeCounts`` deleted, or None if this daemon
        did not purge.
        """
        days = self._conf.database.retention_days
        if not days:
            return None
        owner_token = self._take(now)
        if owner_token is None:
            return None
        before = purge.cutoff(now, days)
        counts = purge.purge(self._database, models.PURGEABLE_STATUSES,
                             before, go_on=self._go_on(owner_token))
        # The end of this purge is when the next interval starts.
        self._renew_at_end(owner_token)
        # Logged at every purge, even of nothing: how often they run is
        # visible.
        LOG.info('Purged %d orders last changed before %s (retention_days '
                 '%s), %d rows in all: %s', counts.orders, before, days,
                 counts.rows, counts)
        return counts

    def _take(self, now):
        """Take the OrderPurge row if it is free or old enough; returns
        our owner token, or None."""
        locks = self._database.repositories.locks
        owner_token = str(uuid.uuid4())
        older_than = now - datetime.timedelta(
            seconds=self._conf.database.purge_interval_seconds)
        try:
            with self._database.session() as session, session.begin():
                if locks.get(session, LOCK) is None:
                    locks.insert(session, LOCK, self._holder_name,
                                 owner_token, now)
                elif not locks.take_over(session, LOCK, self._holder_name,
                                         owner_token, now, older_than):
                    return None
        except (db_exc.DBDuplicateEntry, db_exc.DBDeadlock):
            # Another daemon took it first (on Galera: at COMMIT).
            return None
        return owner_token

    def _go_on(self, owner_token):
        """The purge's ``go_on``: renew the row, unless stopping."""
        locks = self._database.repositories.locks

        def go_on(session):
            if self._stop_event.is_set():
                LOG.info('Purge stopped: the daemon is stopping')
                return False
            if not locks.renew(session, LOCK, owner_token, self._clock()):
                LOG.warning('Purge stopped: another daemon took the '
                            'OrderPurge lock over')
                return False
            return True
        return go_on

    def _renew_at_end(self, owner_token):
        try:
            with self._database.session() as session, session.begin():
                self._database.repositories.locks.renew(
                    session, LOCK, owner_token, self._clock())
        except Exception:
            # The row keeps the time of the last batch: the next purge
            # may come that much sooner, which harms nothing.
            LOG.exception('Could not record the end of the purge')
