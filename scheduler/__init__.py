"""The retry scheduler: a satellite that re-enqueues due retry rows.

Of the ``worker`` package it imports only the layer both sides share
(declared in ``worker/common/__init__.py``: ``worker.common``,
``worker.conf``, ``worker.db``, ``worker.rpc``, ``worker.rpcapi``), never
the worker's manager, service or plugins. What only the scheduler uses
lives here: one pass (``manager``, made of ``pass_lock``, ``recovery``,
``dispatch`` and ``planner``), the liveness rules, the timer
(``service``), the one-process launcher (``in_process``) and the
operator commands (``cmd``). ``tests/unit/test_boundaries.py`` holds
both sides to it.
"""

# Selects oslo.service's threading backend (see worker/__init__.py).
import worker  # noqa: F401
