"""The stall and resume arithmetic of tests.functional.probes."""

from tests.functional import probes


def _probe(successes, stopped_at=None):
    probe = probes.Probe(lambda: True, 1)
    probe.successes = list(successes)
    probe.stopped_at = stopped_at
    return probe


def test_the_stall_is_the_longest_gap_between_successes_in_the_window():
    probe = _probe([0.0, 0.1, 0.2, 3.2, 3.3, 9.0])
    assert round(probe.stall(0.0, 4.0), 6) == 3.0
    # Edges count: nothing from 3.3 to the end of the window.
    assert round(probe.stall(3.0, 8.0), 6) == 4.7


def test_no_stall_is_counted_past_the_probes_stop():
    probe = _probe([0.0, 1.0], stopped_at=1.5)
    assert probe.stall(0.0, 20.0) == 1.0
    assert probe.stall(2.0, 20.0) == 0.0


def test_resumed_is_the_wait_for_the_first_success_after_a_moment():
    probe = _probe([0.0, 5.5, 6.0])
    assert probe.resumed(4.0) == 1.5
    assert probe.resumed(7.0) is None
