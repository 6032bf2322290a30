"""Stop a worker pool whose processes keep failing (barbican-worker).

oslo.service's threading launcher (cotyledon's ``ServiceManager``) forks
a new process for every one that exits, for ever, and never exits
itself: a pool that cannot start (a bad ``transport_url``) would fork
failing processes until an operator notices. ``ChildFailures`` counts
the processes that exited with an error; once ``[worker]
max_child_failures`` of them fall within ``[worker]
child_failure_window_seconds``, it gives up: the master stops as on
SIGTERM, and ``barbican-worker`` exits 1.
"""

import collections
import os
import signal
import time

from oslo_log import log as logging

LOG = logging.getLogger(__name__)


class ChildFailures:
    """Counts failed exits of a pool's processes; gives up past a bound.

    :param limit: failures within ``window`` seconds that stop the pool.
    :param give_up: called once, when it gives up (by default, SIGTERM to
        this process: the launcher's own graceful stop).
    :param clock: returns seconds (``time.monotonic``).
    """

    def __init__(self, limit, window, give_up=None, clock=time.monotonic):
        self._limit = limit
        self._window = window
        self._give_up = give_up or _terminate_self
        self._clock = clock
        self._times = collections.deque()
        #: True once the pool was told to stop.
        self.gave_up = False

    def on_dead_worker(self, service_id, worker_id, exit_code):
        """cotyledon's ``dead_worker`` hook: a process of the pool ended
        with ``exit_code`` (negative: killed by that signal)."""
        if exit_code == 0 or self.gave_up:
            return
        now = self._clock()
        self._times.append(now)
        while self._times and now - self._times[0] > self._window:
            self._times.popleft()
        if len(self._times) < self._limit:
            return
        self.gave_up = True
        LOG.critical('%d worker processes failed within %ds (the last '
                     'with status %d; their errors are logged above): '
                     'stopping barbican-worker ([worker] '
                     'max_child_failures)', len(self._times), self._window,
                     exit_code)
        self._give_up()


def _terminate_self():
    # The launcher's SIGTERM handler stops the children and the master.
    os.kill(os.getpid(), signal.SIGTERM)


def watch(launcher, conf):
    """Watch the processes of ``launcher`` (``oslo_service.service.launch``'s
    result on the threading backend); return the ``ChildFailures``."""
    failures = ChildFailures(conf.worker.max_child_failures,
                             conf.worker.child_failure_window_seconds)
    # NOTE: oslo.service has no public hook for a dead child; its
    # launcher's cotyledon ServiceManager has one
    # (tests/unit/worker/common/test_child_failures.py pins it).
    launcher._manager.register_hooks(on_dead_worker=failures.on_dead_worker)
    return failures
