"""The pass lock: the blueprint's ``EntityLock`` row named OrderRetryTask.

One pass runs at a time, whichever daemon runs it: a pass inserts the row
first (the primary key refuses a second holder), renews it by its owner
token in every transaction that deletes rows, and deletes it, by the same
token, at the end. A lock is stale, and cleared by the next pass, when it
is older than ``retry_lock_timeout_seconds`` (the blueprint's rule) or,
sooner, when its holder stopped heartbeating for ``service_down_time``
(a killed daemon). That rule is written once, in ``judge``: the daemon,
``retry explain``, ``lock show`` and ``barbican-retry-status`` all use it.
"""

import dataclasses
import datetime
import enum
import uuid

from oslo_db import exception as db_exc
from oslo_log import log as logging

from scheduler import liveness
from worker.db import models
from worker.db import repositories as repos

LOG = logging.getLogger(__name__)

LOCK = models.ORDER_RETRY_TASK_LOCK


class Glance(enum.Enum):
    """What a read-only look at the lock tells a pass."""

    #: Nobody holds it.
    FREE = 'free'
    #: Held, and too young to be stale by either rule: its holder is on it.
    FRESH = 'fresh'
    #: Held long enough that it may be stale: judge it under a write
    #: transaction.
    OLD = 'old'


@dataclasses.dataclass(frozen=True)
class LockState:
    """The lock as judged at one moment."""

    holder: str | None = None
    owner_token: str | None = None
    taken_at: datetime.datetime | None = None
    #: Why the lock is stale, or None when it is not (or not held).
    stale_reason: str | None = None

    @property
    def held(self) -> bool:
        """True if some process holds the lock."""
        return self.holder is not None

    @property
    def stale(self) -> bool:
        """True if the lock is held and stale."""
        return self.stale_reason is not None


def glance(session: repos.Session,
           repositories: repos.Repositories,
           cutoffs: liveness.Cutoffs) -> Glance:
    """Look at the lock, reading only one row; returns a ``Glance``.

    A lock taken at or after both cut-offs cannot be stale by either rule,
    so the live-services read is left to ``judge``.
    """
    row = repositories.locks.get(session, LOCK)
    if row is None:
        return Glance.FREE
    if row.created_at >= max(cutoffs.alive_since, cutoffs.lock_stale_before):
        return Glance.FRESH
    return Glance.OLD


def judge(session: repos.Session,
          repositories: repos.Repositories,
          cutoffs: liveness.Cutoffs) -> LockState:
    """Return the ``LockState``: who holds the lock, and whether it is stale.

    :param cutoffs: a ``scheduler.liveness.Cutoffs``.
    """
    row = repositories.locks.get(session, LOCK)
    if row is None:
        return LockState()
    reason = None
    if row.created_at < cutoffs.lock_stale_before:
        timeout = (cutoffs.now - cutoffs.lock_stale_before).total_seconds()
        reason = 'taken at %s, older than %ds' % (row.created_at, timeout)
    elif (row.created_at < cutoffs.alive_since and
          row.worker_host_name not in repositories.services.live_names(
              session, cutoffs.alive_since)):
        reason = 'its holder stopped heartbeating'
    return LockState(holder=row.worker_host_name,
                     owner_token=row.owner_token, taken_at=row.created_at,
                     stale_reason=reason)


class PassLock:
    """Takes, renews, releases and clears the pass lock for one daemon.

    :param holder_name: recorded in the lock row: the daemon's service
        name (``pid@host``), so that others can tell from its heartbeat
        whether it is alive.
    """

    def __init__(self, database: repos.Database,
                 holder_name: str) -> None:
        self._database = database
        self._locks = database.repositories.locks
        self._holder_name = holder_name

    def glance(self, session: repos.Session,
               cutoffs: liveness.Cutoffs) -> Glance:
        """``glance`` on this daemon's database."""
        return glance(session, self._database.repositories, cutoffs)

    def acquire(self, now: datetime.datetime) -> str | None:
        """Take the lock; returns its owner token, or None if it is held."""
        owner_token = str(uuid.uuid4())
        try:
            with self._database.session() as session, session.begin():
                self._locks.insert(session, LOCK, self._holder_name,
                                   owner_token, now)
        except (db_exc.DBDuplicateEntry, db_exc.DBDeadlock):
            # A deadlock is the same lost race on a Galera cluster: two
            # daemons on different nodes both inserted the row, and the
            # second to commit was refused.
            return None
        return owner_token

    def renew(self, session: repos.Session, owner_token: str,
              now: datetime.datetime) -> bool:
        """Renew our lock in the caller's transaction.

        Returns False if it is no longer ours (cleared as stale): the
        caller must then write nothing.
        """
        renewed: bool = self._locks.renew(session, LOCK, owner_token, now)
        return renewed

    def release(self, owner_token: str) -> None:
        """Release our lock; never raises (a stale lock is cleared later)."""
        try:
            with self._database.session() as session, session.begin():
                released = self._locks.release(session, LOCK, owner_token)
        except Exception:
            LOG.exception('Could not release the OrderRetryTask lock; it '
                          'will be cleared when stale')
            return
        if not released:
            LOG.warning('The OrderRetryTask lock was no longer ours at the '
                        'end of the pass')

    def clear_if_stale(self, cutoffs: liveness.Cutoffs) -> bool:
        """Clear the lock if it is stale; returns True if it was cleared.

        Only the lock that was judged is deleted (by its owner token),
        never one a live daemon took in between.
        """
        try:
            with self._database.session() as session, session.begin():
                state = judge(session, self._database.repositories, cutoffs)
                # A stale lock is held: it has an owner token.
                if not state.stale or state.owner_token is None:
                    return False
                cleared: bool = self._locks.release(session, LOCK,
                                                    state.owner_token)
        except db_exc.DBDeadlock:
            # Another daemon cleared it, or its holder renewed it, at the
            # same moment on another Galera node: theirs stands.
            return False
        if cleared:
            LOG.warning('Cleared the stale OrderRetryTask lock of %s: %s',
                        state.holder, state.stale_reason)
        return cleared
