"""Order type options: how a step's policy is resolved, and bad values."""

import dataclasses

from oslo_config import cfg
import pytest

from scheduler import conf as scheduler_conf
from tests import config
from worker import conf as worker_conf
from worker.conf import order_types as order_type_conf
from worker import order_types
from worker import policy


@pytest.fixture
def fanout():
    return order_types.get('fanout')


def _conf_from_file(tmp_path, text):
    """A parsed ConfigOpts reading ``text`` as its only config file."""
    path = tmp_path / 'barbican-retry.conf'
    path.write_text(text)
    conf = cfg.ConfigOpts()
    worker_conf.register_opts(conf)
    scheduler_conf.register_opts(conf)
    conf([], project='barbican-retry', default_config_files=[str(path)])
    return conf


def test_unset_options_keep_the_declared_policy(fanout):
    conf = config.make_conf()
    for step in list(fanout.steps) + [fanout.compensation]:
        assert order_type_conf.step_policy(conf, fanout, step.name) == \
            step.policy


def test_deprecated_defaults_do_not_replace_a_declared_policy(fanout):
    # [worker] max_unavailable_retries defaults to 10 (max_attempts 11):
    # unset, the check steps keep their declared 5.
    conf = config.make_conf()
    assert conf.worker.max_unavailable_retries == 10
    assert order_type_conf.step_policy(
        conf, fanout, 'check_key').max_attempts == 5


def test_deprecated_worker_options_apply_once_an_operator_sets_them(fanout):
    conf = config.make_conf(**{
        'worker.max_unavailable_retries': 2,
        'worker.unavailable_backoff_base_seconds': 4,
        'worker.unavailable_backoff_max_seconds': 40,
    })
    for name in ('check_key', 'issue', 'revoke'):
        resolved = order_type_conf.step_policy(conf, fanout, name)
        assert resolved == dataclasses.replace(
            fanout.step(name).policy, max_attempts=3,
            backoff_base_seconds=4.0, backoff_max_seconds=40.0)


def test_a_deprecated_option_in_a_config_file_applies_even_at_its_default(
        tmp_path, fanout):
    conf = _conf_from_file(tmp_path,
                           '[worker]\nmax_unavailable_retries = 10\n')
    resolved = order_type_conf.step_policy(conf, fanout, 'check_key')
    assert resolved.max_attempts == 11
    # Only the option the operator wrote is taken.
    assert resolved.backoff_base_seconds == 1.0


def test_a_step_option_wins_over_the_deprecated_one(tmp_path, fanout):
    conf = _conf_from_file(tmp_path, '\n'.join([
        '[worker]',
        'max_unavailable_retries = 2',
        'unavailable_backoff_base_seconds = 4',
        '[step:fanout.issue]',
        'max_attempts = 20',
        '',
    ]))
    issue = order_type_conf.step_policy(conf, fanout, 'issue')
    assert issue.max_attempts == 20
    assert issue.backoff_base_seconds == 4.0
    # A [step:...] group changes only its own step.
    assert order_type_conf.step_policy(
        conf, fanout, 'poll').max_attempts == 3


def test_every_policy_field_can_be_overridden(tmp_path, fanout):
    conf = _conf_from_file(tmp_path, '\n'.join([
        '[step:fanout.poll]',
        'retry_on = ValueError, pkg.mod.Error',
        'never_retry = KeyError',
        'backoff = linear',
        'backoff_base_seconds = 5',
        'backoff_max_seconds = 50',
        'jitter = false',
        'max_attempts = 2',
        'timeout_seconds = 30',
        'deadline_seconds = 300',
        'max_polls = 0',
        '',
    ]))
    assert order_type_conf.step_policy(conf, fanout, 'poll') == \
        policy.StepPolicy(
            retry_on=('ValueError', 'pkg.mod.Error'),
            never_retry=('KeyError',), backoff=policy.LINEAR,
            backoff_base_seconds=5.0, backoff_max_seconds=50.0,
            jitter=False, max_attempts=2, timeout_seconds=30.0,
            deadline_seconds=300.0, max_polls=0)


def test_list_fields_become_tuples(fanout):
    conf = config.make_conf(**{
        'step:fanout.issue.retry_on': ['ValueError', 'OSError'],
        'step:fanout.issue.never_retry': ['ConnectionRefusedError'],
    })
    resolved = order_type_conf.step_policy(conf, fanout, 'issue')
    assert resolved.retry_on == ('ValueError', 'OSError')
    assert resolved.never_retry == ('ConnectionRefusedError',)
    # Hashable, like a declared policy.
    hash(resolved)


def test_an_empty_list_clears_a_declared_retry_on(fanout):
    conf = config.make_conf(**{'step:fanout.check_key.retry_on': []})
    assert order_type_conf.step_policy(
        conf, fanout, 'check_key').retry_on == ()


@pytest.mark.parametrize('line,option', [
    ('backoff = sometimes', 'backoff'),
    ('max_attempts = 0', 'max_attempts'),
    ('timeout_seconds = 0', 'timeout_seconds'),
    ('max_polls = -1', 'max_polls'),
    ('jitter = perhaps', 'jitter'),
])
def test_bad_values_are_refused_naming_the_option(tmp_path, line, option):
    conf = _conf_from_file(tmp_path, '[step:fanout.issue]\n%s\n' % line)
    with pytest.raises(cfg.ConfigFileValueError,
                       match='option %s ' % option):
        worker_conf.check_values(conf)


def test_every_installed_step_has_a_group(fanout):
    conf = config.make_conf()
    for name in list(fanout.names) + ['revoke']:
        assert order_type_conf.step_group('fanout', name) in conf
    certificate = order_types.get('certificate')
    for name in certificate.names:
        assert order_type_conf.step_group('certificate', name) in conf


def test_order_deadline_is_declared_unless_overridden(fanout):
    # fanout declares no deadline: one declared the same way as a type would.
    declared = dataclasses.replace(fanout, deadline_seconds=3600.0)
    conf = config.make_conf()
    assert order_type_conf.order_deadline_seconds(conf, declared) == 3600.0
    conf.set_override('deadline_seconds', 7200.0,
                      order_type_conf.type_group('fanout'))
    assert order_type_conf.order_deadline_seconds(conf, declared) == 7200.0


def test_an_order_deadline_of_zero_removes_a_declared_one(fanout):
    declared = dataclasses.replace(fanout, deadline_seconds=3600.0)
    conf = config.make_conf(**{'order_type:fanout.deadline_seconds': 0.0})
    assert order_type_conf.order_deadline_seconds(conf, declared) == 0.0
