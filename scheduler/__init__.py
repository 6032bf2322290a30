"""The retry scheduler: a satellite that re-enqueues due retry rows.

Of the ``worker`` package, the retry daemon (every module here but
``scheduler.manage``) imports only what ``WORKER_IMPORTS`` names, and the
operator commands only what ``scheduler.manage.WORKER_IMPORTS`` names;
never the worker's manager or service. What only the scheduler uses lives
here: one pass (``manager``, made of ``pass_lock``, ``recovery``,
``dispatch`` and ``planner``), the ticks of schedules (``ticks``), the
purge (``retention``), the liveness rules, the timer
(``service``), the one-process launcher (``in_process``), the console
scripts (``cmd``) and, apart, the operator commands (``manage``).
``tests/unit/test_boundaries.py`` holds both sides to it.
"""

# Selects oslo.service's threading backend (see worker/__init__.py).
import worker  # noqa: F401

#: What the retry daemon may import of the ``worker`` package, besides
#: the package itself: the ground floor both sides share (the values,
#: ``worker.values``, and the utilities, ``worker.common``), the
#: configuration, the request ids of orders (``worker.context``), the
#: data layer, the RPC client, the announcements of orders on the bus
#: (``worker.notifications.bus``), and the public API of schedules
#: (``worker.api.schedules``), through which it creates the orders of
#: their ticks as any caller would.
WORKER_IMPORTS = ('worker.common', 'worker.conf', 'worker.context',
                  'worker.db', 'worker.notifications.bus', 'worker.rpc',
                  'worker.rpcapi', 'worker.api.schedules', 'worker.tracing',
                  'worker.values')
