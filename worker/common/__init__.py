"""The ground floor's utilities, which every layer and both sides share.

Clocks, inputs and ticks, group commit, heartbeats, the metrics
endpoint, the oslo.service backend selection, the type of jitter's
randomness, the rules of callback URLs (``targets``) and the Guru
Meditation Reports: none imports a layer above the ground floor
(``tests/unit/test_boundaries.py``, ``LAYERS``).

The retry scheduler is a satellite of the worker pool: of the ``worker``
package it may import only this package, the values (``worker.values``)
and the worker's client side, as two allow-lists say:
``scheduler.WORKER_IMPORTS`` for the retry daemon,
``scheduler.manage.WORKER_IMPORTS`` for the operator commands, which
also read the declarations of work. What the second names is the whole
shared layer: none of it imports anything else of the worker's (its
manager, service), nor the scheduler.
``tests/unit/test_boundaries.py`` holds both sides to it.
"""
