"""The operator commands: ``barbican-retry-manage`` and
``barbican-retry-status``.

Their console scripts are the thin modules of ``scheduler.cmd``; the
application (``app``), one module per noun of ``barbican-retry-manage``
(``orders``, ``schedules``, ``retries``, ``locks``, ``services``,
``notifications``, ``database``, ``status``), the upgrade checks
(``upgrade_checks``), what only they read with (``explain``,
``overview``, ``display``, ``order_columns``) and the argument types of
the order and schedule commands (``arguments``) live here, apart from
the retry daemon. They read and write through the repositories of the
database they are given (``database.repositories``), as the daemon
does.
"""

import scheduler

#: What the operator commands may import of the ``worker`` package: the
#: retry daemon's list, the declarations of work, which they read to
#: create, show and explain orders (``worker.order_types``, and the
#: plugins and step policies the types are made of), and the
#: notifications, whose deliveries they show and resume, and the public
#: API (``worker.api``), the one way the order commands create, read and
#: cancel orders, and the rules of notification URLs that the REST API
#: applies too (``worker.notification_admin``), which ``notification url
#: set-secret`` and ``set-owner`` call. It is the whole layer the worker
#: shares with the scheduler.
WORKER_IMPORTS = scheduler.WORKER_IMPORTS + (
    'worker.api', 'worker.notifications', 'worker.order_types',
    'worker.plugins', 'worker.policy', 'worker.notification_admin')

#: The one module of the ``worker`` package that the order commands
#: (``orders``) import: what a service builds on is what they build on.
ORDER_COMMANDS_IMPORT = 'worker.api'

#: What the schedule commands (``schedules``) import of the ``worker``
#: package besides ``worker.api``: the public API of schedules.
SCHEDULE_COMMANDS_IMPORT = 'worker.api.schedules'
