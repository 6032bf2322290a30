"""Percentiles of lateness in bounded memory, within 1 %."""

import math
import random

import pytest

from scheduler import lateness


def _exact(values, fraction):
    ordered = sorted(values)
    return ordered[math.ceil(fraction * len(ordered)) - 1]


@pytest.mark.parametrize('fraction', [0.5, 0.9, 0.99])
def test_percentiles_are_within_one_percent(fraction):
    rng = random.Random(5)
    values = [rng.expovariate(0.2) for _ in range(50000)]
    tracker = lateness.LatenessTracker()
    for value in values:
        tracker.add(value)
    exact = _exact(values, fraction)
    assert exact <= tracker.percentile(fraction) <= exact * 1.0101
    assert tracker.count == 50000 and tracker.maximum == max(values)
    assert len(tracker._buckets) < 2000


def test_every_value_goes_to_the_observer():
    seen = []
    tracker = lateness.LatenessTracker(observe=seen.append)
    for value in (3.0, 1.0, 2.0):
        tracker.add(value)
    assert seen == [3.0, 1.0, 2.0]
    assert 3.0 <= tracker.p99() <= 3.0 * 1.0101


def test_empty_tracker_and_tiny_values():
    assert lateness.LatenessTracker().p99() == 0.0
    tracker = lateness.LatenessTracker()
    tracker.add(0.0)
    tracker.add(-0.5)        # a clock step back: counted, not an error
    assert tracker.p99() == 0.0
