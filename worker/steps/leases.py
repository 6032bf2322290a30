"""Leases that a running step extends (``OrderView.extend_lease``).

A claim gives a run the lease of its policy's ``timeout_seconds``; the
retry daemon takes back a step whose lease ended (and whose
``[worker] lease_grace_seconds`` passed) as hung. A step that works for a
long time keeps a short lease and extends it as it goes: a real hang is
then found within one short lease, not one long enough for the slowest
run. Each extension is fenced like every write of a run: by its token
(and owner), so a run that was taken back cannot extend.
"""

import datetime
import functools

from oslo_log import log as logging

from worker.plugins import base
from worker.steps import transactions

LOG = logging.getLogger(__name__)


class Leases:
    """Extends the leases of this process's runs.

    :param owner: this process's name (``pid@host``), the runs' owner.
    :param clock: returns the current UTC time (naive), corrected to the
        database's clock, as the claim's.
    """

    def __init__(self, database, owner, clock):
        self._database = database
        self._repositories = database.repositories
        self._owner = owner
        self._clock = clock

    def extender(self, run):
        """The ``OrderView.lease_extender`` of ``run``."""
        return functools.partial(self.extend, run)

    def extend(self, run, seconds):
        """Hold ``run``'s lease until ``seconds`` from now.

        :raises base.LeaseLost: the run no longer holds its step.
        """
        if not self._extend(run, seconds):
            raise base.LeaseLost(
                'step %s of order %s is no longer held by this run (token '
                '%d): it was taken back or has ended'
                % (run.step, run.order_id, run.token))
        LOG.debug('Step %s of order %s extended its lease by %gs',
                  run.step, run.order_id, seconds)

    @transactions.retried
    def _extend(self, run, seconds):
        now = self._clock()
        with self._database.session() as session, session.begin():
            return self._repositories.steps.extend_lease(
                session, run.order_id, run.step, run.token, self._owner,
                now, now + datetime.timedelta(seconds=seconds))
