"""Casting the steps a command returned, and announcing what it did.

The last stop of a write through the front door: the commands
(``worker.api.commands``) commit and return the steps to cast; the
caller announces the change on the bus first (``Outbox.announce``), so
that it comes before any announcement of a worker that runs the steps,
then casts them (``cast_steps``).
"""

from oslo_log import log as logging

from worker.api import coalesce
from worker import context as context_module
from worker import values as worker_values

LOG = logging.getLogger(__name__)


def cast_steps(worker_api, steps, rows_per_cast=50, context=None):
    """Cast ``steps`` in messages of up to ``rows_per_cast``, each to its
    topic (``rpcapi.Topics``).

    :param worker_api: a ``worker.rpcapi.WorkerAPI``, or None to leave
        the steps to the retry daemon.
    :param context: the request the casts are made for (its ids are the
        messages'), or None.

    Returns how many steps could not be cast (logged; the retry daemon
    dispatches them after their dispatch deadline).
    """
    steps = list(steps)
    failed = 0
    for start in range(0, len(steps), rows_per_cast):
        chunk = steps[start:start + rows_per_cast]
        try:
            if worker_api is None:
                raise RuntimeError('no RPC client')
            worker_api.run_steps(chunk, context=context)
        except Exception as exc:
            failed += len(chunk)
            error = exc
    if failed:
        LOG.warning('%d of %d steps could not be cast (%s); the retry '
                    'daemon dispatches them after [scheduler] '
                    'dispatch_deadline_seconds', failed, len(steps), error)
    return failed


class Outbox:
    """What leaves an ``OrderAPI`` after a commit: announcements on the
    bus, then casts.

    :param worker_api: a ``worker.rpcapi.WorkerAPI``, or None to leave
        the first casts to the retry daemon. Concurrent requests' casts
        share messages (``worker.api.coalesce``).
    :param rows_per_cast: the most steps in one message.
    :param announcer: a ``worker.notifications.bus.Announcer``, or None.
    """

    def __init__(self, worker_api, rows_per_cast, announcer):
        self._worker_api = (coalesce.CoalescedCasts(worker_api,
                                                    rows_per_cast)
                            if worker_api is not None else None)
        self._rows_per_cast = rows_per_cast
        self._announcer = announcer

    def announce(self, event_type, orders, status, now, reason=None):
        """Announce on the bus that ``orders`` (rows or ``Order``) moved
        to ``status`` at ``now``, once that committed, and wait a moment
        for it to be sent (``bus.Announcer.flush``): the caller casts the
        orders' steps next, whose workers announce what follows."""
        if self._announcer is None:
            return
        for order in orders:
            self._announcer.order(event_type, order.id, order.project_id,
                                  status, now, reason=reason,
                                  request=worker_values.request_ids_of(order))
        self._announcer.flush()

    def cast(self, steps, request):
        """``cast_steps`` of ``steps`` for the request whose
        ``worker.values.RequestIds`` are ``request``."""
        return cast_steps(self._worker_api, steps, self._rows_per_cast,
                          context=context_module.for_ids(request))
