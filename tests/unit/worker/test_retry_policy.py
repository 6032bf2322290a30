"""Back-off after an unavailable remote service."""

import random

from worker import retry_policy


class _Extreme:
    """A random source that always returns one end of the range."""

    def __init__(self, high):
        self.high = high

    def uniform(self, low, high):
        return high if self.high else low


def test_backoff_doubles_then_caps():
    top = [retry_policy.backoff_seconds(n, 2.0, 20.0, _Extreme(True))
           for n in range(1, 7)]
    assert top == [2.0, 4.0, 8.0, 16.0, 20.0, 20.0]


def test_backoff_keeps_at_least_half():
    low = [retry_policy.backoff_seconds(n, 2.0, 20.0, _Extreme(False))
           for n in range(1, 7)]
    assert low == [1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_backoff_spreads_concurrent_retries():
    rng = random.Random(42)
    delays = {round(retry_policy.backoff_seconds(5, 1.0, 600.0, rng), 3)
              for _ in range(50)}
    assert len(delays) > 40
    assert all(8.0 <= d <= 16.0 for d in delays)
