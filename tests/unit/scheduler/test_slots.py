"""The daemons' slots of the period."""

import random

import pytest

from scheduler import slots


def _passes(count, period, jitter, cycles, rng):
    """Times of the passes of ``count`` daemons following their slots.

    Each starts at its own time; only the passes while all of them run
    are returned.
    """
    runs = []
    for rank in range(count):
        now, times = rng.uniform(0, period), []
        for _ in range(cycles):
            now += slots.delay_to_slot(now, period, rank, count, jitter, rng)
            times.append(now)
        runs.append(times)
    first, last = max(r[0] for r in runs), min(r[-1] for r in runs)
    return sorted(t for r in runs for t in r if first <= t <= last)


@pytest.mark.parametrize('count', [1, 2, 3, 5])
def test_daemons_pass_in_turn_every_period_over_their_count(count):
    times = _passes(count, 15, 0.0, 20, random.Random(count))
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert min(gaps) == pytest.approx(15 / count)
    assert max(gaps) == pytest.approx(15 / count)


def test_jitter_moves_a_pass_by_at_most_half_its_share_of_the_slot():
    times = _passes(2, 15, 0.2, 200, random.Random(7))
    gaps = [b - a for a, b in zip(times, times[1:])]
    # Each pass moves by up to 0.75 s (0.2 / 2 of a 7.5 s slot).
    assert 6 - 1e-9 <= min(gaps) and max(gaps) <= 9 + 1e-9
    assert max(gaps) - min(gaps) > 2            # it does dither


def test_one_daemon_with_jitter_waits_period_plus_or_minus_jitter():
    times = _passes(1, 15, 0.2, 200, random.Random(3))
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert 12 - 1e-9 <= min(gaps) and max(gaps) <= 18 + 1e-9


def test_a_long_pass_keeps_its_next_slot():
    # Started at its slot (15 s) and ran 12 s: the next slot is at 30 s.
    delay = slots.delay_to_slot(15, 15, 0, 1, 0.0, elapsed=12)
    assert delay == pytest.approx(3)
    # Past it: at once.
    assert slots.delay_to_slot(15, 15, 0, 1, 0.0, elapsed=16) == 0


def test_a_pass_just_before_its_slot_does_not_run_again_in_it():
    # Ran 0.1 s before its slot (at 15 s) because of the dither.
    delay = slots.delay_to_slot(14.95, 15, 0, 1, 0.0)
    assert delay == pytest.approx(15.05)


def test_rank_is_the_place_among_the_live_daemons_by_name():
    assert slots.rank_of('2@b', ['1@a', '2@b', '3@c']) == (1, 3)
    # Not heartbeating yet: it takes the place after the others, whatever
    # its name.
    assert slots.rank_of('9@z', ['1@a', '2@b']) == (2, 3)
    assert slots.rank_of('0@a', ['1@b', '2@c']) == (2, 3)
