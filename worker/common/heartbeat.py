"""Service heartbeats: each process records itself as ``pid@host``."""

import os

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


def service_name(host, pid=None):
    """Return the name a process records itself under, ``pid@host``."""
    return '%d@%s' % (os.getpid() if pid is None else pid, host)


class Heartbeat:
    """Writes one process's heartbeat row; removes it on a clean stop.

    Each heartbeat first measures the process's clock against the
    database's (``clock.measure``), then records the offset with the
    heartbeat, in the database's time.

    :param kind: ``models.WORKER`` or ``models.SCHEDULER``.
    :param clock: the process's ``worker.common.clock.DatabaseClock``.
    :param topic: the RPC topic a worker serves, which its row shows.
    """

    def __init__(self, database, kind, host, clock, topic=None):
        self._database = database
        self._services = database.repositories.services
        self.kind = kind
        self.host = host
        self.pid = os.getpid()
        self.name = service_name(host, self.pid)
        self._clock = clock
        self._topic = topic
        self._failing = False

    def beat(self):
        """Write the heartbeat; log (once per outage) when it cannot."""
        try:
            with self._database.session() as session, session.begin():
                offset = self._clock.measure(session)
                self._services.heartbeat(session, self.name, self.kind,
                                         self.host, self.pid,
                                         self._clock.now(),
                                         clock_offset=offset,
                                         topic=self._topic)
        except Exception as exc:
            if not self._failing:
                LOG.error('Heartbeat of %s failed, will retry: %s',
                          self.name, exc)
            self._failing = True
            return
        if self._failing:
            LOG.info('Heartbeat of %s written again', self.name)
        self._failing = False

    def remove(self):
        """Delete this process's row (clean stop)."""
        try:
            with self._database.session() as session, session.begin():
                self._services.remove(session, self.name)
        except Exception:
            LOG.exception('Could not remove service row %s; it will be '
                          'cleared once its heartbeat is stale', self.name)

    def start(self, thread_group, interval):
        """Beat now, then every ``interval`` seconds in ``thread_group``."""
        self.beat()
        thread_group.add_timer_args(interval, self.beat,
                                    initial_delay=interval,
                                    stop_on_exception=False)
