"""Prometheus metrics of a barbican-retry daemon.

What the daemon did (passes, casts, recoveries) and, from the census that
it reads every ``report_interval``, what the database holds (processes
alive, unfinished orders, parked rows). The alert rules in
``etc/prometheus/`` and the dashboard in ``etc/grafana/`` read these
names; ``tests/functional/test_observability.py`` checks that each one
they name is exported.
"""

import prometheus_client

# Lateness spans sub-second (a backlog drained at once) to hours (a daemon
# that was down); the buckets cover both.
_LATENESS_BUCKETS = (0.1, 0.5, 1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600,
                     1800, 3600)


#: Every label of ``barbican_retry_passes_total``, exported at 0 from the
#: start so that rates and alerts see each series before its first pass.
PASS_OUTCOMES = ('ran', 'idle', 'skipped', 'failed')


class SchedulerMetrics:
    """The daemon's metrics, fed from each pass's ``PassResult`` and from
    the census."""

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
        for outcome in PASS_OUTCOMES:
            self.passes.labels(outcome=outcome)
        self.last_pass = prometheus_client.Gauge(
            'barbican_retry_last_pass_timestamp_seconds',
            'When this daemon last ended a pass that ran or was idle '
            '(Unix time); its start time until then.', registry=registry)
        self.last_pass.set_to_current_time()
        self.period = prometheus_client.Gauge(
            'barbican_retry_schedule_period_seconds',
            'The configured [scheduler] schedule_period_seconds: the alert '
            'rules derive their bounds from it.', registry=registry)
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
        self.services_alive = prometheus_client.Gauge(
            'barbican_retry_services_alive',
            'Processes alive by their heartbeats, by kind (worker, '
            'scheduler), as the database shows them.', ['kind'],
            registry=registry)
        self.unfinished_orders = prometheus_client.Gauge(
            'barbican_retry_unfinished_orders',
            'Orders not yet in a final status, by status (PENDING, '
            'CANCELLING).', ['status'], registry=registry)
        self.parked_rows = prometheus_client.Gauge(
            'barbican_retry_parked_rows',
            'Retry rows set aside as uncastable, waiting for an operator.',
            registry=registry)

        self.deliveries_waiting = prometheus_client.Gauge(
            'barbican_retry_notification_deliveries_waiting',
            'Deliveries of notifications (one per order and callback URL) '
            'with events not yet acknowledged, by state: sending (cast, '
            'running or retrying) and paused (their URL is unavailable).',
            ['state'], registry=registry)
        self.unavailable_urls = prometheus_client.Gauge(
            'barbican_retry_notification_urls_unavailable',
            'Callback URLs marked unavailable after failing too often; '
            'their deliveries wait for "notification url enable".',
            registry=registry)

        self.paused = prometheus_client.Gauge(
            'barbican_retry_paused',
            'Things paused (barbican-retry-manage ... pause), by target '
            '(order_type, topic, resource, order, schedule).', ['target'],
            registry=registry)
        self.pauses_too_old = prometheus_client.Gauge(
            'barbican_retry_pauses_too_old',
            'Pauses older than [scheduler] pause_alert_age_seconds.',
            registry=registry)

    def record_census(self, census):
        """Set the gauges that show the database's state (a ``Census``)."""
        for kind, count in census.services_alive.items():
            self.services_alive.labels(kind=kind).set(count)
        for status, count in census.unfinished_orders.items():
            self.unfinished_orders.labels(status=status).set(count)
        self.parked_rows.set(census.parked_rows)
        for state, count in census.deliveries_waiting.items():
            self.deliveries_waiting.labels(state=state).set(count)
        self.unavailable_urls.set(census.unavailable_urls)
        for target, count in census.paused.items():
            self.paused.labels(target=target).set(count)
        self.pauses_too_old.set(census.pauses_too_old)

    def record_pass(self, result):
        """Count one pass that ran (``result`` is its PassResult)."""
        if result.stale_lock_cleared:
            self.stale_locks_cleared.inc()
        if result.idle or result.locked:
            self.last_pass.set_to_current_time()
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
