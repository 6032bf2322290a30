"""Probes that time how long a fault stalls the work, and when it resumes.

A ``Probe`` calls one action at a fixed interval in a thread of its own
and records when each call succeeded. ``WriteProbe``'s action is one
INSERT committed through a pool such as the daemons' (pre-ping, bounded
socket timeouts): its gaps are how long writes through the load balancer
stall while a Galera node dies or the cluster has no quorum.
``ProgressProbe``'s action succeeds when more orders have finished than
at its previous call (or none is left): its gaps are how long the
processes make no progress though work waits (a broker without quorum
stalls no write, but every cast). ``Heartbeats`` writes the heartbeat
rows of processes a test plays, as their own threads would: they stay
alive however slowly the commands under test start on a busy machine.
"""

import threading
import time

import sqlalchemy as sa

from worker.common import clock
from worker.db import models
from worker.db import services

_TABLE = 'write_probe'


class Probe:
    """Call ``action`` every ``interval`` seconds until ``stop``.

    ``action`` returns True on success; an exception is a failure.
    Bounded: it stops by itself after ``limit`` seconds.
    """

    def __init__(self, action, interval, limit=3600):
        self._action = action
        self._interval = interval
        self._limit = limit
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        #: monotonic times at which a call returned success.
        self.successes = []
        #: monotonic time at which it stopped calling (None: not yet).
        self.stopped_at = None
        self.failures = 0

    def start(self):
        """Start calling the action; returns self."""
        self._thread.start()
        return self

    def stop(self):
        """Stop calling it (waits for the call in progress)."""
        self._stopping.set()
        self._thread.join(60)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc_info):
        self.stop()

    def _run(self):
        deadline = time.monotonic() + self._limit
        while not self._stopping.is_set() and time.monotonic() < deadline:
            try:
                ok = self._action()
            except Exception:  # a failed call is what we measure
                ok = False
            if ok:
                self.successes.append(time.monotonic())
            else:
                self.failures += 1
            self._stopping.wait(self._interval)
        self.stopped_at = time.monotonic()

    def stall(self, since, until):
        """The longest time between two successes in ``[since, until]``
        (monotonic), counting from ``since`` and up to ``until`` when no
        success comes before or after it."""
        if self.stopped_at is not None:
            until = min(until, self.stopped_at)
        if until <= since:
            return 0.0
        times = [t for t in self.successes if since <= t <= until]
        edges = [since] + times + [until]
        return max(b - a for a, b in zip(edges, edges[1:]))

    def resumed(self, since):
        """Seconds from ``since`` to the first success after it, or None."""
        later = [t for t in self.successes if t >= since]
        return later[0] - since if later else None


def _engine(url):
    """A pool built as oslo.db builds the daemons': pre-ping, so that a
    connection HAProxy cut is replaced, and socket timeouts, so that a
    call to a node that died without closing its sockets fails instead
    of hanging."""
    return sa.create_engine(
        url, pool_size=1, max_overflow=0, pool_pre_ping=True,
        connect_args={'connect_timeout': 2, 'read_timeout': 5,
                      'write_timeout': 5})


def _run_on(engine, statement, parameters=None):
    """Run ``statement`` in a transaction of its own; its rows, if any."""
    with engine.connect() as connection:
        try:
            result = connection.execute(sa.text(statement), parameters)
            rows = result.all() if result.returns_rows else None
            connection.commit()
            return rows
        except Exception:
            # Not back into the pool: its rollback would fail too (the
            # node is gone or has no quorum), and be logged as such.
            connection.invalidate()
            raise


class WriteProbe(Probe):
    """INSERT a row every ``interval`` seconds into ``url``'s database."""

    def __init__(self, url, interval=0.1, limit=3600):
        self.engine = _engine(url)
        _run_on(self.engine, 'CREATE TABLE IF NOT EXISTS %s (id BIGINT '
                'AUTO_INCREMENT PRIMARY KEY, at DOUBLE NOT NULL)' % _TABLE)
        super().__init__(self._write, interval, limit)

    def _write(self):
        _run_on(self.engine, 'INSERT INTO %s (at) VALUES (:at)' % _TABLE,
                {'at': time.time()})
        return True

    def stop(self):
        """Stop writing, drop the table and the pool (once)."""
        if self._stopping.is_set():
            return
        super().stop()
        try:
            _run_on(self.engine, 'DROP TABLE IF EXISTS %s' % _TABLE)
        finally:
            self.engine.dispose()


class ProgressProbe(Probe):
    """Succeeds when more orders are terminal than at the previous call,
    or when none is left to finish (nothing to do is no stall)."""

    def __init__(self, url, interval=0.5, limit=3600):
        self.engine = _engine(url)
        self._seen = -1
        super().__init__(self._progressed, interval, limit)

    def _progressed(self):
        counts = dict(_run_on(self.engine, 'SELECT status, COUNT(*) FROM '
                              'orders GROUP BY status'))
        done = sum(counts.get(status, 0)
                   for status in models.TERMINAL_STATUSES)
        progressed, self._seen = done > self._seen, done
        return progressed or not (counts.get(models.PENDING, 0) +
                                  counts.get(models.CANCELLING, 0))

    def stop(self):
        """Stop looking; drop the pool."""
        super().stop()
        self.engine.dispose()


class Heartbeats(Probe):
    """Heartbeats of the processes ``names`` (``pid@host``) of ``kind``,
    every ``interval`` seconds on the database's clock, as a live
    process's heartbeat thread writes them; the first before ``start``
    returns. Used as ``with Heartbeats(...):`` around commands that must
    find these processes alive by ``service_down_time``, however long the
    commands take to start.
    """

    def __init__(self, database, kind, names, interval=0.5):
        self._database = database
        self._kind = kind
        self._names = names
        self._clock = clock.measured(database, max_offset=3600)
        super().__init__(self._beat, interval)

    def _beat(self):
        now = self._clock.now()
        with self._database.session() as session, session.begin():
            for name in self._names:
                pid, host = name.split('@', 1)
                services.heartbeat(session, name, self._kind, host,
                                   int(pid), now)
        return True

    def start(self):
        """Beat once, then every ``interval`` in the thread."""
        self._beat()
        return super().start()
