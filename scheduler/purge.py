"""Purging finished orders, a batch per transaction: the unit of work of
``barbican-retry-manage db purge`` and of the retry daemon's retention
(``scheduler.retention``).

Each batch is one short transaction (``worker.db.purge``: choose up to
``batch_size`` old finished orders through their index, lock them, delete
their rows, then them), so that workers and daemons running beside it
wait at most one batch for a row it holds. A batch that lost a race (a
deadlock; on Galera a write set refused at COMMIT) rolled back whole and
runs again.
"""

import datetime

from oslo_log import log as logging

from worker.db import models
from worker.db import rows
from worker.db import session as db_session

LOG = logging.getLogger(__name__)

#: Orders per transaction unless told otherwise: about 10,000 rows with
#: their steps, events and history, a transaction of a fraction of a
#: second.
DEFAULT_BATCH_SIZE = 1000

Counts = rows.PurgeCounts


def cutoff(now, days):
    """The moment before which an order last changed is purged."""
    return now - datetime.timedelta(days=days)


def purge(database, statuses, before, batch_size=DEFAULT_BATCH_SIZE,
          go_on=lambda session: True):
    """Delete the orders in ``statuses`` last changed before ``before``,
    and their rows, a batch per transaction; returns the ``Counts``.

    :param go_on: called first in each batch's transaction with its
        session; the purge stops, before that batch, when it returns
        False (a daemon stopping, or a lock no longer ours).
    """
    statuses = models.check_purgeable(statuses)
    total = Counts()
    while True:
        done = _batch(database, statuses, before, batch_size, go_on)
        if done is None:
            break
        counts, chosen = done
        total += counts
        LOG.debug('Purge batch: %s', counts)
        # Fewer than a batch: none was left to choose.
        if chosen < batch_size:
            break
    return total


@db_session.retry_lost_race
def _batch(database, statuses, before, batch_size, go_on):
    """One batch: ``(Counts, orders chosen)``, or None if told to stop."""
    repository = database.repositories.purge
    with database.session() as session, session.begin():
        if not go_on(session):
            return None
        ids = repository.select_batch(session, statuses, before, batch_size)
        return repository.delete(session, ids, statuses, before), len(ids)


def count(database, statuses, before):
    """What ``purge`` would delete now, per table (a dry run)."""
    statuses = models.check_purgeable(statuses)
    with database.reader() as session, session.begin():
        return database.repositories.purge.count(session, statuses, before)
