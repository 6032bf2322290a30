"""Prometheus metrics of a barbican-retry daemon."""

import prometheus_client

# Lateness spans sub-second (a backlog drained at once) to hours (a daemon
# that was down); the buckets cover both.
_LATENESS_BUCKETS = (0.1, 0.5, 1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600,
                     1800, 3600)


class SchedulerMetrics:
    """The daemon's counters, fed from each pass's ``PassResult``."""

    def __init__(self):
        registry = prometheus_client.CollectorRegistry()
        self.registry = registry

        def counter(name, text, labels=()):
            return prometheus_client.Counter(
                'barbican_retry_' + name, text, labels, registry=registry)

        self.passes = counter(
            'passes', 'Passes by outcome: ran (took the lock), idle '
            '(nothing due, nothing lost: only read), skipped (another '
            'daemon held the lock), failed (raised).', ['outcome'])
        self.pass_duration = prometheus_client.Histogram(
            'barbican_retry_pass_duration_seconds',
            'Duration of passes that took the lock.', registry=registry)
        self.dispatched = counter('rows_dispatched',
                                  'Retry rows cast to the workers.')
        self.parked = counter('rows_parked',
                              'Retry rows set aside as uncastable.')
        self.cast_failures = counter(
            'cast_failures', 'Casts that failed or timed out (rows kept).')
        self.recovered = counter(
            'orders_recovered', 'Steps of orders taken back from a dead '
            'owner, a lost dispatch or an ended lease, and dispatched '
            'again (the name predates steps; kept for dashboards).')
        self.lock_acquisitions = counter(
            'lock_acquisitions', 'Times this daemon took the lock.')
        self.stale_locks_cleared = counter(
            'stale_locks_cleared', 'Stale locks cleared by this daemon.')
        self.lateness = prometheus_client.Histogram(
            'barbican_retry_lateness_seconds',
            'Cast time minus retry_at of each dispatched row.',
            buckets=_LATENESS_BUCKETS, registry=registry)
        self.due_backlog = prometheus_client.Gauge(
            'barbican_retry_due_backlog',
            'Retry rows due but not cast at the end of the last pass.',
            registry=registry)

    def record_pass(self, result):
        """Count one pass that ran (``result`` is its PassResult)."""
        if result.stale_lock_cleared:
            self.stale_locks_cleared.inc()
        if not result.locked:
            self.passes.labels(
                outcome='idle' if result.idle else 'skipped').inc()
            return
        self.passes.labels(outcome='ran').inc()
        self.lock_acquisitions.inc()
        self.pass_duration.observe(result.duration)
        self.dispatched.inc(result.dispatched)
        self.parked.inc(result.parked)
        self.cast_failures.inc(result.cast_failures)
        self.recovered.inc(result.recovered)
        if result.backlog is not None:
            self.due_backlog.set(result.backlog)

    def record_failure(self):
        """Count a pass that raised."""
        self.passes.labels(outcome='failed').inc()
