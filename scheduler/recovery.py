"""Recovery: take back the orders whose dispatch or owner was lost.

oslo.messaging acknowledges a message before it runs it, so a worker
killed in the middle of a step loses its cast for good, and a cast can be
lost on its way. The database tells: an order claimed by a process that
stopped heartbeating, or dispatched and not taken up within
``dispatch_deadline_seconds``. Each one found gets a new generation (the
old token becomes stale) and a retry row due now, which the same pass
then casts like any other. An order whose owner is alive is never taken,
however long its step runs.
"""

import dataclasses
import datetime

from oslo_log import log as logging

from scheduler import liveness

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Recovered:
    """What one recovery did."""

    #: Orders taken back and given a retry row due now.
    orders: int
    #: Services removed because they stopped heartbeating.
    dead_services: tuple


class Recovery:
    """Finds and takes back lost orders, once per ``report_interval``.

    A process is declared dead ``service_down_time`` after its last
    heartbeat, and heartbeats come every ``report_interval``: looking more
    often than that finds nothing new.
    """

    def __init__(self, conf, database, pass_lock):
        self._conf = conf
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
        """In a read-only look: True if this pass must take orders back.

        When recovery is due and nothing is lost, that counts as done.
        """
        if not self.due(cutoffs.now):
            return False
        if self._lost(session, cutoffs, 1) or \
                self._repositories.services.any_dead(session,
                                                     cutoffs.alive_since):
            return True
        self._done_at = cutoffs.now
        return False

    def run(self, token, cutoffs):
        """Take lost orders back under our lock; returns ``Recovered``.

        Returns None, changing nothing, if the lock is no longer ours.
        """
        repositories = self._repositories
        with self._database.session() as session, session.begin():
            if not self._pass_lock.renew(session, token, cutoffs.now):
                return None
            limit = self._conf.scheduler.batch_size
            lost = self._lost(session, cutoffs, limit)
            if len(lost) < limit:
                # All found; with more, the next pass goes on.
                self._done_at = cutoffs.now
            taken = sum(self._take_back(session, order, cutoffs.now)
                        for order in lost)
            dead = repositories.services.delete_dead(session,
                                                     cutoffs.alive_since)
        for name in dead:
            LOG.warning('Service %s stopped heartbeating; removed', name)
        return Recovered(orders=taken, dead_services=tuple(dead))

    def _lost(self, session, cutoffs, limit):
        """Orders whose dispatch or owner was lost, up to ``limit`` each."""
        orders = self._repositories.orders
        live = self._repositories.services.live_names(session,
                                                      cutoffs.alive_since)
        dead_owners = liveness.dead_owners(orders.owners(session), live)
        return (orders.lost_dispatches(session, cutoffs.dispatch_lost_before,
                                       limit) +
                orders.owned_by(session, dead_owners, limit))

    def _take_back(self, session, order, now):
        """Give ``order`` a new token and a retry row due ``now``."""
        if not self._repositories.orders.take_back(
                session, order.id, order.generation, now):
            return False
        self._repositories.retry_tasks.add(
            session, order.id, order.step, now, args=[order.id],
            kwargs={'generation': order.generation + 1},
            retry_count=order.attempt, now=now)
        LOG.warning('Order %s taken back and dispatched again (%s): %s',
                    order.id, order.step,
                    'its owner %s stopped heartbeating' % order.owner
                    if order.owner else 'no worker took up its dispatch')
        return True
