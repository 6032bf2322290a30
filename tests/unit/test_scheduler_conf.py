"""Scheduler options: defaults, consistency, jitter."""

import random

import pytest

from scheduler import conf as scheduler_conf
from scheduler import service
from tests import config


def test_blueprint_defaults():
    conf = config.make_conf()
    assert conf.scheduler.schedule_period_seconds == 15
    assert conf.simple_certificate.delay_before_update_seconds == 5
    scheduler_conf.validate(conf)


def test_lock_timeout_must_exceed_a_worst_case_pass():
    conf = config.make_conf(**{'scheduler.retry_lock_timeout_seconds': 100,
                               'scheduler.max_pass_seconds': 50})
    with pytest.raises(ValueError, match='retry_lock_timeout_seconds'):
        scheduler_conf.validate(conf)


def test_next_delay_stays_within_the_jitter():
    rng = random.Random(1)
    delays = [service.next_delay(15, 0.2, rng) for _ in range(200)]
    assert min(delays) >= 12 and max(delays) <= 18
    assert max(delays) - min(delays) > 4     # it does dither


def test_next_delay_without_jitter_is_the_period():
    assert service.next_delay(15, 0.0) == 15
