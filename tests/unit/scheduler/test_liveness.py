"""Liveness and staleness rules, with time as a parameter."""

import datetime

from scheduler import liveness
from tests import config

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)


def _ago(seconds):
    return NOW - datetime.timedelta(seconds=seconds)


def _cutoffs(**overrides):
    return liveness.Cutoffs.at(NOW, config.make_conf(**overrides))


def test_a_heartbeat_within_the_down_time_is_alive():
    cutoffs = _cutoffs(service_down_time=60)
    assert cutoffs.is_alive(_ago(59.9))
    assert cutoffs.is_alive(_ago(60))
    assert not cutoffs.is_alive(_ago(60.1))


def test_only_a_fresh_heartbeat_keeps_an_order():
    owners = {'1@a', '2@a', '3@b'}
    assert liveness.dead_owners(owners, {'1@a', '9@z'}) == {'2@a', '3@b'}
    assert liveness.dead_owners(owners, owners) == set()
    assert liveness.dead_owners(set(), {'1@a'}) == set()


def test_lock_and_dispatch_cut_offs():
    assert liveness.lock_stale_before(NOW, 300) == _ago(300)
    assert liveness.dispatch_lost_before(NOW, 15) == _ago(15)


def test_cutoffs_apply_each_rule_at_one_moment():
    cutoffs = _cutoffs(**{'service_down_time': 60,
                          'scheduler.retry_lock_timeout_seconds': 300,
                          'scheduler.dispatch_deadline_seconds': 15})
    assert (cutoffs.now, cutoffs.alive_since, cutoffs.lock_stale_before,
            cutoffs.dispatch_lost_before) == (NOW, _ago(60), _ago(300),
                                              _ago(15))


def test_a_daemon_judges_a_down_time_after_its_last_failed_pass():
    assert liveness.sees_long_enough(NOW, None, 60)
    assert not liveness.sees_long_enough(NOW, _ago(59.9), 60)
    assert liveness.sees_long_enough(NOW, _ago(60), 60)
    # The clock went back past the failure: not blind for ever.
    assert liveness.sees_long_enough(_ago(10), NOW, 60)
