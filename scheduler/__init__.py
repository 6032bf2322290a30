"""The retry scheduler: a satellite that re-enqueues due retry rows.

It may import ``worker.db``, ``worker.rpc``, ``worker.rpcapi`` and
``worker.conf`` only; never the worker's manager, service or plugins.
"""

# Selects oslo.service's threading backend (see worker/__init__.py).
import worker  # noqa: F401
