"""The stall and recovery a network fault of a chaos run is measured by."""

from tests.chaos import network


def _progress(samples):
    progress = network.Progress(database=None)
    progress.samples = samples
    return progress


def test_stall_is_the_longest_time_without_an_order_finishing():
    # (monotonic, finished, pending): nothing finishes from 11 to 18.
    progress = _progress([(10, 5, 9), (11, 6, 8), (14, 6, 8), (18, 7, 7),
                          (19, 8, 6), (25, 9, 5)])
    assert progress.stall(10, 20) == 7
    # From the start of the window to its first finish.
    assert progress.stall(12, 20) == 6


def test_stall_ends_when_nothing_is_pending():
    progress = _progress([(10, 5, 1), (11, 6, 0), (30, 6, 0)])
    assert progress.stall(10, 40) == 1


def test_stall_without_samples_is_unknown():
    assert _progress([(1, 1, 1)]).stall(10, 20) is None


def test_recovery_is_the_time_to_the_first_finish_after_the_fault():
    progress = _progress([(10, 5, 9), (20, 5, 9), (21, 5, 9), (23.5, 6, 8)])
    assert progress.first_finish_after(20.5) == 3
    assert _progress([(10, 5, 0), (21, 5, 0)]).first_finish_after(20) is None


def test_faults_are_held_past_the_limits_they_test():
    assert network.HOLD['retry-lock-db-cut'] > 20
    assert network.HOLD['rabbitmq-peers-cut'] > 60
    summary = network.Fault('worker-db-cut', 12, target='host3 | galera',
                            ended=5.0, stall_s=4.25, recovery_s=1.5)
    assert summary.summary() == ('worker-db-cut(host3 | galera, held 12s, '
                                 'stall 4.2s, recovery 1.5s)')
