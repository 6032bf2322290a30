"""What the worker pool and the retry scheduler share.

The retry scheduler is a satellite of the worker pool: it may import, of
the ``worker`` package, only this package (heartbeats, the metrics
endpoint, the oslo.service backend selection, the type of jitter's
randomness, creating and cancelling orders) and the worker's client
side: ``worker.conf`` (configuration), ``worker.db`` (the data layer),
``worker.rpc`` and ``worker.rpcapi`` (the RPC client), and the
declarations of work: ``worker.order_types`` (with the certificate
plugins they run, ``worker.plugins``) and ``worker.policy``, which the
operator commands read to create, show and explain orders. Nothing here
imports the worker's manager or service, nor the scheduler.
``tests/unit/test_boundaries.py`` holds both sides to it.
"""
