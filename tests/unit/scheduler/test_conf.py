"""Scheduler options: defaults and consistency."""

import pytest

from scheduler import conf as scheduler_conf
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
