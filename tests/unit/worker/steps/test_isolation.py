"""A step that crashed runs alone in its process (worker.steps.isolation).
"""

import threading
import time
import types

import pytest

from worker.steps import isolation

# Long enough for a thread that is not held back to have moved on.
MOMENT = 0.2
# What a test waits at most for a thread that should move.
PATIENCE = 5.0


def _run(crashes, step='issue', order_id='order-1', token=1, lease=60.0):
    return types.SimpleNamespace(
        crashes=crashes, step=step, order_id=order_id, token=token,
        policy=types.SimpleNamespace(timeout_seconds=lease))


def _in_thread(target):
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize('crashes, suspect', [(0, False), (1, True),
                                              (2, True), (3, False)])
def test_a_suspect_crashed_before_and_will_run(crashes, suspect):
    # At max_step_crashes the step fails without running: nothing to
    # isolate.
    assert isolation.Isolation(3, 1.0).suspect(_run(crashes)) is suspect


def test_a_suspect_waits_for_the_others_and_new_steps_wait_for_it():
    gate = isolation.Isolation(3, 1.0)
    events = []
    neighbour_ends = threading.Event()

    def neighbour():
        with gate.held():
            events.append('neighbour runs')
            neighbour_ends.wait(PATIENCE)
            events.append('neighbour ends')

    def suspect():
        with gate.held(), gate.alone(_run(1), PATIENCE):
            events.append('suspect runs')
            time.sleep(MOMENT)
            events.append('suspect ends')

    def late():
        with gate.held():
            events.append('late runs')

    first = _in_thread(neighbour)
    while 'neighbour runs' not in events:
        time.sleep(0.01)
    second = _in_thread(suspect)
    time.sleep(MOMENT)
    # The suspect is claimed but waits: the neighbour still runs.
    assert events == ['neighbour runs']
    neighbour_ends.set()
    while 'suspect runs' not in events:
        time.sleep(0.01)
    third = _in_thread(late)
    for thread in (first, second, third):
        thread.join(PATIENCE)
    # A step that came while the suspect ran waited for it before its
    # claim.
    assert events == ['neighbour runs', 'neighbour ends', 'suspect runs',
                      'suspect ends', 'late runs']


def test_two_suspects_claimed_together_run_one_after_the_other():
    gate = isolation.Isolation(3, 1.0)
    running, most = [], []
    lock = threading.Lock()
    both_held = threading.Barrier(2)

    def suspect(order_id):
        with gate.held():
            both_held.wait(PATIENCE)
            with gate.alone(_run(1, order_id=order_id), PATIENCE):
                with lock:
                    running.append(order_id)
                    most.append(len(running))
                time.sleep(MOMENT)
                with lock:
                    running.remove(order_id)

    threads = [_in_thread(lambda o=o: suspect(o)) for o in ('a', 'b')]
    started = time.monotonic()
    for thread in threads:
        thread.join(PATIENCE)
    assert not any(thread.is_alive() for thread in threads)
    # Neither waited for the other's count: no deadlock, no bounded wait.
    assert time.monotonic() - started < PATIENCE / 2
    assert most == [1, 1]


def test_a_continuation_claimed_already_runs_beside_a_waiting_suspect():
    gate = isolation.Isolation(3, 1.0)
    events = []
    handed = threading.Event()
    continuation_ends = threading.Event()

    def hander():
        with gate.held():
            handed.wait(PATIENCE)
            # Its apply claimed a continuation for a thread of its own.
            gate.add()
            _in_thread(continuation)

    def continuation():
        events.append('continuation runs')
        continuation_ends.wait(PATIENCE)
        events.append('continuation ends')
        gate.leave()

    def suspect():
        with gate.held(), gate.alone(_run(1), PATIENCE):
            events.append('suspect runs')

    first = _in_thread(hander)
    second = _in_thread(suspect)
    time.sleep(MOMENT)
    handed.set()
    while 'continuation runs' not in events:
        time.sleep(0.01)
    time.sleep(MOMENT)
    assert events == ['continuation runs']
    continuation_ends.set()
    for thread in (first, second):
        thread.join(PATIENCE)
    assert events == ['continuation runs', 'continuation ends',
                      'suspect runs']


def test_the_wait_is_bounded_by_a_neighbour_that_hangs(caplog):
    gate = isolation.Isolation(3, 1.0)
    hung = threading.Event()
    ran = threading.Event()

    def neighbour():
        with gate.held():
            hung.wait(PATIENCE)

    def suspect():
        with gate.held(), gate.alone(_run(2), MOMENT):
            ran.set()

    first = _in_thread(neighbour)
    time.sleep(MOMENT / 4)
    second = _in_thread(suspect)
    assert ran.wait(PATIENCE)
    hung.set()
    for thread in (first, second):
        thread.join(PATIENCE)
    assert 'runs beside 1 other step(s) still running after 0.2s' in \
        caplog.text


def test_a_suspect_claimed_here_keeps_the_place_until_its_run_ended():
    gate = isolation.Isolation(3, 1.0)
    suspect = _run(1)
    assert not gate.busy()
    gate.reserve(suspect)
    assert gate.busy()
    with gate.held():
        # Another suspect's run ending frees nothing.
        with gate.alone(_run(1, order_id='order-2'), PATIENCE):
            pass
        assert gate.busy()
        with gate.alone(suspect, PATIENCE):
            assert gate.busy()
    assert not gate.busy()


def test_a_suspect_that_never_ran_keeps_the_place_for_its_lease_only():
    gate = isolation.Isolation(3, 1.0)
    gate.reserve(_run(2, lease=MOMENT))
    assert gate.busy()
    time.sleep(MOMENT * 1.5)
    assert not gate.busy()
