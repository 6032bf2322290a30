"""A step's retry policy: back-off shapes and the decisions it makes."""

import datetime

import pytest

from worker import policy

NOW = datetime.datetime(2026, 1, 1, 12, 0, 0)
BASE = 3.0
CAP = 100.0


class ExtremeUniform:
    """A ``randomness.Uniform`` that always draws one end of the range.

    Drawing the extremes is what bounds jitter: every real draw lies
    between the two delays these give.
    """

    def __init__(self, end):
        self._end = end
        self.calls = []

    def uniform(self, a, b):
        self.calls.append((a, b))
        return b if self._end == 'high' else a


LOW = ExtremeUniform('low')
HIGH = ExtremeUniform('high')


def _policy(**fields):
    fields.setdefault('backoff_base_seconds', BASE)
    fields.setdefault('backoff_max_seconds', CAP)
    fields.setdefault('jitter', False)
    return policy.StepPolicy(**fields)


@pytest.mark.parametrize('backoff,expected', [
    (policy.EXPONENTIAL, [BASE, 2 * BASE, 4 * BASE, 8 * BASE]),
    (policy.LINEAR, [BASE, 2 * BASE, 3 * BASE, 4 * BASE]),
    (policy.CONSTANT, [BASE, BASE, BASE, BASE]),
])
def test_backoff_shapes(backoff, expected):
    step_policy = _policy(backoff=backoff)
    assert [policy.backoff_seconds(step_policy, failure)
            for failure in (1, 2, 3, 4)] == expected


@pytest.mark.parametrize('backoff', policy.BACKOFFS)
def test_every_shape_is_capped_by_backoff_max_seconds(backoff):
    step_policy = _policy(backoff=backoff, backoff_base_seconds=CAP * 2)
    assert policy.backoff_seconds(step_policy, 1) == CAP
    # Far beyond the cap an exponential must still answer the cap.
    assert policy.backoff_seconds(step_policy, 60) == CAP


def test_jitter_keeps_half_and_draws_the_other_half():
    step_policy = _policy(jitter=True)
    full = 4 * BASE     # the third exponential delay
    rng = ExtremeUniform('low')
    assert policy.backoff_seconds(step_policy, 3, rng) == full / 2
    assert rng.calls == [(0, full / 2)]
    assert policy.backoff_seconds(step_policy, 3, HIGH) == full


def test_jitter_applies_to_the_capped_delay():
    step_policy = _policy(jitter=True)
    assert policy.backoff_seconds(step_policy, 30, LOW) == CAP / 2
    assert policy.backoff_seconds(step_policy, 30, HIGH) == CAP


def test_no_jitter_draws_nothing():
    rng = ExtremeUniform('low')
    policy.backoff_seconds(_policy(jitter=False), 2, rng)
    assert rng.calls == []


@pytest.mark.parametrize('retry_on,names,expected', [
    (('ValueError',), ['ValueError', 'builtins.ValueError'], True),
    (('builtins.ValueError',), ['ValueError', 'builtins.ValueError'], True),
    (('pkg.mod.Error',), ['Error', 'other.mod.Error'], False),
    (('KeyError',), ['ValueError', 'builtins.ValueError'], False),
    ((), ['ValueError'], False),
    (('*',), ['ValueError'], True),
    (('*',), [], True),
])
def test_retries_matches_short_and_qualified_names(retry_on, names,
                                                   expected):
    assert policy.retries(_policy(retry_on=retry_on), names) is expected


@pytest.mark.parametrize('retry_on', [('*',), ('LookupError',)])
def test_never_retry_wins_over_retry_on(retry_on):
    step_policy = _policy(retry_on=retry_on,
                          never_retry=('builtins.KeyError',))
    names = ['KeyError', 'builtins.KeyError', 'LookupError',
             'builtins.LookupError']
    assert not policy.retries(step_policy, names)
    assert policy.retries(step_policy, ['LookupError',
                                        'builtins.LookupError'])


def test_after_failure_retries_with_the_backoff():
    step_policy = _policy(max_attempts=5)
    assert policy.after_failure(step_policy, 3, NOW, NOW, 'boom') == \
        policy.Retry(4 * BASE)


def test_after_failure_gives_up_at_max_attempts_naming_the_last_error():
    step_policy = _policy(max_attempts=3)
    assert isinstance(policy.after_failure(step_policy, 2, NOW, NOW, 'x'),
                      policy.Retry)
    decision = policy.after_failure(step_policy, 3, NOW, NOW,
                                    'CA unreachable')
    assert isinstance(decision, policy.GiveUp)
    assert '3 attempts' in decision.reason
    assert 'CA unreachable' in decision.reason


def test_after_failure_gives_up_when_the_retry_would_pass_the_deadline():
    step_policy = _policy(backoff=policy.CONSTANT, backoff_base_seconds=10,
                          deadline_seconds=60)
    started = NOW - datetime.timedelta(seconds=50)
    # now + 10 s is exactly the deadline: still allowed.
    assert policy.after_failure(step_policy, 2, started, NOW, 'x') == \
        policy.Retry(10)
    late = NOW + datetime.timedelta(seconds=1)
    decision = policy.after_failure(step_policy, 4, started, late,
                                    'timeout talking to CA')
    assert isinstance(decision, policy.GiveUp)
    assert 'deadline of 60s' in decision.reason
    assert '4 attempts' in decision.reason
    assert 'timeout talking to CA' in decision.reason


def test_no_deadline_or_no_first_run_never_gives_up_by_time():
    far = NOW + datetime.timedelta(days=365)
    assert isinstance(policy.after_failure(
        _policy(deadline_seconds=0), 1, NOW, far, 'x'), policy.Retry)
    assert isinstance(policy.after_failure(
        _policy(deadline_seconds=1), 1, None, far, 'x'), policy.Retry)


@pytest.mark.parametrize('asked,expected', [
    (7.0, 7.0),             # replaces the back-off (3 s at failure 1)
    (CAP * 10, CAP),        # capped by backoff_max_seconds
    (-5.0, 0.0),            # a negative Retry-After is "now"
])
def test_a_delay_the_step_asks_for_replaces_the_backoff(asked, expected):
    rng = ExtremeUniform('high')
    decision = policy.after_failure(_policy(jitter=True), 1, NOW, NOW, 'x',
                                    asked_delay=asked, rng=rng)
    assert decision == policy.Retry(expected)
    assert rng.calls == []      # an asked delay is not jittered


def test_after_poll_gives_up_past_max_polls():
    step_policy = _policy(max_polls=3)
    assert policy.after_poll(step_policy, 3, NOW, NOW, 5.0) == \
        policy.Retry(5.0)
    decision = policy.after_poll(step_policy, 4, NOW, NOW, 5.0)
    assert isinstance(decision, policy.GiveUp)
    assert 'max_polls' in decision.reason
    assert '3 polls' in decision.reason


def test_max_polls_zero_is_unlimited():
    assert policy.after_poll(_policy(max_polls=0), 10 ** 9, NOW, NOW,
                             5.0) == policy.Retry(5.0)


def test_after_poll_gives_up_at_the_deadline():
    step_policy = _policy(deadline_seconds=30)
    started = NOW - datetime.timedelta(seconds=29)
    assert policy.after_poll(step_policy, 1, started, NOW, 1.0) == \
        policy.Retry(1.0)
    decision = policy.after_poll(step_policy, 1, started, NOW, 2.0)
    assert isinstance(decision, policy.GiveUp)
    assert 'deadline of 30s' in decision.reason


@pytest.mark.parametrize('fields,message', [
    ({'backoff': 'sometimes'}, "backoff must be one of .*'sometimes'"),
    ({'max_attempts': 0}, 'max_attempts must be at least 1'),
    ({'timeout_seconds': 0}, 'timeout_seconds must be positive'),
    ({'timeout_seconds': -1}, 'timeout_seconds must be positive'),
])
def test_step_policy_refuses_bad_values(fields, message):
    with pytest.raises(ValueError, match=message):
        policy.StepPolicy(**fields)


def test_fields_lists_every_overridable_field_in_order():
    assert policy.FIELDS[0] == 'retry_on'
    assert set(policy.FIELDS) == set(vars(policy.StepPolicy()))


@pytest.mark.parametrize('failure', [1025, 1100, 10 ** 6])
def test_an_exponential_past_any_float_is_the_cap(failure):
    # The options allow any number of attempts: the 1,025th failure's
    # power of two is more than a float holds.
    step_policy = _policy(max_attempts=10 ** 7)
    assert policy.backoff_seconds(step_policy, failure) == CAP
    assert policy.backoff_seconds(_policy(backoff_base_seconds=0.0),
                                  failure) == 0.0
    decision = policy.after_failure(step_policy, failure, None, NOW, 'boom')
    assert decision == policy.Retry(CAP)
