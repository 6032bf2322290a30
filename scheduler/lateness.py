"""Lateness of casts (cast time minus retry_at), in bounded memory."""

import collections
import math

# Buckets grow by 1 %: any percentile read from them is within 1 % of the
# exact value, and a day of lateness needs about 1,600 buckets, whatever
# the number of casts.
_GROWTH = 1.01
_SMALLEST = 0.001


def _bucket(seconds):
    if seconds <= _SMALLEST:
        return 0
    return math.ceil(math.log(seconds / _SMALLEST, _GROWTH))


def _upper_bound(bucket):
    return _SMALLEST * _GROWTH ** bucket


class LatenessTracker:
    """Counts casts and their lateness; reads percentiles within 1 %.

    A pass over a backlog of a million rows holds a few hundred counters,
    never the million values.

    :param observe: called with every value as well (a Prometheus
        histogram's ``observe``), or None.
    """

    def __init__(self, observe=None):
        self.count = 0
        self.maximum = 0.0
        self._buckets = collections.Counter()
        self._observe = observe

    def add(self, seconds):
        """Record one cast's lateness."""
        self.count += 1
        self.maximum = max(self.maximum, seconds)
        self._buckets[_bucket(seconds)] += 1
        if self._observe is not None:
            self._observe(seconds)

    def percentile(self, fraction):
        """Return the ``fraction`` (0..1) percentile, 0.0 with no value."""
        if not self.count:
            return 0.0
        wanted = math.ceil(fraction * self.count)
        seen = 0
        for bucket in sorted(self._buckets):
            seen += self._buckets[bucket]
            if seen >= wanted:
                return min(_upper_bound(bucket), self.maximum)
        return self.maximum

    def p99(self):
        """Return the 99th percentile."""
        return self.percentile(0.99)
