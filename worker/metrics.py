"""Prometheus metrics of a barbican-worker process.

Served by ``worker.common.metrics_server``: one registry per process.
"""

import prometheus_client


class WorkerMetrics:
    """Counts the steps a worker process ran, by their result."""

    def __init__(self):
        self.registry = prometheus_client.CollectorRegistry()
        self.orders_processed = prometheus_client.Counter(
            'barbican_retry_worker_steps', 'Order steps processed, by '
            'result: active, error, retry (scheduled again), stale '
            '(dropped: token no longer current), superseded (result '
            'discarded: the order moved on while the step ran).',
            ['result'], registry=self.registry)

    def observe_result(self, result):
        """Count one step's result."""
        self.orders_processed.labels(result=result).inc()
