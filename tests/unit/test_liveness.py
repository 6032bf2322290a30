"""Liveness and staleness rules, with time as a parameter."""

import datetime

from worker import liveness

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)


def _ago(seconds):
    return NOW - datetime.timedelta(seconds=seconds)


def test_a_heartbeat_within_the_down_time_is_alive():
    assert liveness.is_alive(_ago(59.9), NOW, 60)
    assert liveness.is_alive(_ago(60), NOW, 60)
    assert not liveness.is_alive(_ago(60.1), NOW, 60)


def test_only_a_fresh_heartbeat_keeps_an_order():
    owners = {'1@a', '2@a', '3@b'}
    assert liveness.dead_owners(owners, {'1@a', '9@z'}) == {'2@a', '3@b'}
    assert liveness.dead_owners(owners, owners) == set()
    assert liveness.dead_owners(set(), {'1@a'}) == set()


def test_lock_and_dispatch_cut_offs():
    assert liveness.lock_stale_before(NOW, 300) == _ago(300)
    assert liveness.dispatch_lost_before(NOW, 15) == _ago(15)
