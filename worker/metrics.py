"""Prometheus metrics of a barbican-worker process.

Served by ``worker.common.metrics_server``: one registry per process.
The counter of the process's notifications on the message bus
(``barbican_retry_bus_notifications_total``) is on it too, made by
``worker.notifications.bus.counter``, which the retry daemon shares.
"""

import prometheus_client

from worker.steps import runs

#: Every label of ``barbican_retry_worker_steps_total``: each is exported
#: from the start, at 0, so that rates and alerts see a series before its
#: first step.
STEP_RESULTS = runs.ALL


class WorkerMetrics:
    """Counts the steps a worker process ran, by their result."""

    def __init__(self):
        self.registry = prometheus_client.CollectorRegistry()
        self.orders_processed = prometheus_client.Counter(
            'barbican_retry_worker_steps', 'Order steps processed, by '
            'result: done (the step; its order goes on), active (the '
            'last step; the order is ACTIVE), error, retry (scheduled '
            'again), cancelled (a compensation step ended), stale '
            '(dropped: token no longer current), superseded (result '
            'discarded: the step moved on while it ran); deliveries of '
            'notifications: delivered (sent what there was), retry, '
            'paused (their URL is unavailable).',
            ['result'], registry=self.registry)
        for result in STEP_RESULTS:
            self.orders_processed.labels(result=result)
        self.events_delivered = prometheus_client.Counter(
            'barbican_retry_notification_events_delivered', 'Events of '
            'orders acknowledged by their callback URLs.',
            registry=self.registry)
        self.requests_failed = prometheus_client.Counter(
            'barbican_retry_notification_requests_failed', 'Requests to '
            'callback URLs that failed (any answer but a 2xx, a timeout, '
            'a connection refused or dropped).', registry=self.registry)
        self.steps_continued = prometheus_client.Counter(
            'barbican_retry_worker_continued_steps', 'Steps this process '
            'claimed in the transaction of the result that made them '
            'ready and ran itself, with no message ([worker] '
            'max_local_steps); also counted by their results.',
            registry=self.registry)

    def export_queued_steps(self, room):
        """Export how full a ``worker.intake.Room`` is, read at each
        scrape."""
        queued = prometheus_client.Gauge(
            'barbican_retry_worker_queued_steps', 'Steps this process '
            'received from the broker and has not started yet: at most '
            '[worker] max_queued_steps; at it, the rest waits in the '
            'broker.', registry=self.registry)
        queued.set_function(lambda: room.taken)

    def observe_delivery(self, sent, failed):
        """Count a delivery run's acknowledged events and failure."""
        self.events_delivered.inc(sent)
        if failed:
            self.requests_failed.inc()

    def observe_continued(self, count):
        """Count steps continued here (``worker.steps.continuation``)."""
        self.steps_continued.inc(count)

    def observe_result(self, result):
        """Count one step's result."""
        self.orders_processed.labels(result=result).inc()
