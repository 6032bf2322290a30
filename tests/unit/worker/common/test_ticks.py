"""Durations, cron expressions and the arithmetic of a schedule's ticks."""

import datetime

import pytest

from worker.common import ticks

NOW = datetime.datetime(2026, 11, 26, 12, 0, 0)


def _at(seconds):
    return NOW + datetime.timedelta(seconds=seconds)


@pytest.mark.parametrize('text, seconds', [
    ('30s', 30), ('1s', 1), ('5m', 300), ('1h', 3600), ('30d', 2592000),
    (' 2s ', 2), ('3650d', 3650 * 86400)])
def test_durations(text, seconds):
    assert ticks.parse_duration(text) == seconds


@pytest.mark.parametrize('text', [
    '0s', '3651d', '30', 's', '1.5h', '-1s', '1w', '1 h', '1H', '', None,
    '99999999999s'])
def test_bad_durations_are_refused_with_the_form(text):
    with pytest.raises(ticks.InvalidSchedule,
                       match='(integer and a unit|1 second to 3650 days)'):
        ticks.parse_duration(text)


@pytest.mark.parametrize('expression', [
    '* * * *', '* * * * * *', 'every day', ''])
def test_cron_expressions_of_another_number_of_fields_are_refused(
        expression):
    with pytest.raises(ticks.InvalidSchedule, match='five fields'):
        ticks.check_cron(expression)


@pytest.mark.parametrize('expression, field', [
    ('61 * * * *', "minute field '61'"), ('0 24 * * *', "hour field '24'"),
    ('0 0 32 * *', "day-of-month field '32'"),
    ('0 0 1 13 *', "month field '13'"),
    ('0 0 * * 8', "day-of-week field '8'"),
    ('0 0 * * fun', "day-of-week field 'fun'"),
    ('R * * * *', "minute field 'R'"), ('0 H * * *', "hour field 'H'")])
def test_a_cron_field_out_of_range_is_named(expression, field):
    with pytest.raises(ticks.InvalidSchedule, match=field):
        ticks.check_cron(expression)


@pytest.mark.parametrize('expression, message', [
    ('0 0 31 2 *', 'matches no date'), ('0 0 30 2 *', 'matches no date'),
    (None, 'is a string, not NoneType'), (7, 'is a string, not int'),
    ('0 ' * 200 + '*', '255 characters at most'),
    ('0 0 * * *\x00', 'digits, letters, spaces'),
    ('0\t0 * * *', 'digits, letters, spaces'),
    ('0 0 * * \ud800', 'digits, letters, spaces')])
def test_a_cron_expression_that_is_no_schedule_is_refused_by_its_own_error(
        expression, message):
    # Before, croniter's own error (for 31 February), or a string no
    # column holds.
    with pytest.raises(ticks.InvalidSchedule, match=message):
        ticks.check_cron(expression)


def test_a_cron_expression_is_kept_with_its_fields_joined_by_one_space():
    assert ticks.check_cron(' 0  3 * * mon ') == '0 3 * * mon'
    assert ticks.check_cron('0 0 29 2 *') == '0 0 29 2 *'


def test_a_schedule_has_an_interval_or_a_cron_expression():
    assert ticks.Spec.of(60, None) == ticks.Spec(every_seconds=60)
    assert ticks.Spec.of(None, ' 0  3 * * * ').cron == '0 3 * * *'
    for every, cron in ((None, None), (60, '0 3 * * *')):
        with pytest.raises(ticks.InvalidSchedule, match='one of the two'):
            ticks.Spec.of(every, cron)
    with pytest.raises(ticks.InvalidSchedule):
        ticks.Spec.of(0, None)


def test_first_tick_is_one_interval_after_the_second_of_creation():
    spec = ticks.Spec.of(30, None)
    assert ticks.first_tick(spec, NOW + datetime.timedelta(
        microseconds=700000)) == _at(30)
    assert ticks.first_tick(ticks.Spec.of(None, '*/5 * * * *'),
                            _at(1)) == _at(300)
    # A cron tick is strictly after the moment, even one on a match.
    assert ticks.first_tick(ticks.Spec.of(None, '*/5 * * * *'),
                            NOW) == _at(300)


def test_a_tick_on_time_makes_its_own_order():
    due = ticks.due(ticks.Spec.of(2, None), _at(10), _at(10.4))
    assert due == ticks.Due(ticks=(_at(10),), following=_at(12), missed=0)


def test_ticks_missed_collapse_into_the_latest():
    # Down from tick 10 to 21.5: ticks 10, 12, ..., 20 make one order, 20.
    due = ticks.due(ticks.Spec.of(2, None), _at(10), _at(21.5))
    assert due == ticks.Due(ticks=(_at(20),), following=_at(22), missed=5)
    # Exactly on a tick: that tick is the one, the next is after it.
    due = ticks.due(ticks.Spec.of(2, None), _at(10), _at(22))
    assert (due.tick, due.following) == (_at(22), _at(24))


def test_cron_ticks_missed_collapse_into_the_latest():
    spec = ticks.Spec.of(None, '*/5 * * * *')
    assert ticks.due(spec, _at(300), _at(301)) == ticks.Due(
        ticks=(_at(300),), following=_at(600), missed=0)
    assert ticks.due(spec, _at(300), _at(1800)) == ticks.Due(
        ticks=(_at(1800),), following=_at(2100), missed=5)


def test_the_tick_s_key_names_the_schedule_and_the_tick_in_utc():
    assert ticks.order_key('abc', _at(2)) == \
        'schedule:abc:2026-11-26T12:00:02Z'
    aware = _at(2).replace(tzinfo=datetime.timezone.utc)
    assert ticks.order_key('abc', aware) == ticks.order_key('abc', _at(2))


def test_missed_interval_ticks_are_backfilled_up_to_the_bound():
    # Down from tick 10 to 21.5: ticks 10, 12, ..., 20; the latest 3 run.
    due = ticks.due(ticks.Spec.of(2, None), _at(10), _at(21.5), 3)
    assert due.ticks == (_at(16), _at(18), _at(20))
    assert (due.missed, due.following, due.tick) == (3, _at(22), _at(20))
    # Fewer missed than the bound: each runs once.
    due = ticks.due(ticks.Spec.of(2, None), _at(10), _at(13), 5)
    assert due.ticks == (_at(10), _at(12))
    assert due.missed == 0


def test_missed_cron_ticks_are_backfilled_up_to_the_bound():
    spec = ticks.Spec.of(None, '*/5 * * * *')
    due = ticks.due(spec, _at(300), _at(1800), 2)
    assert due.ticks == (_at(1500), _at(1800))
    assert due.missed == 4


@pytest.mark.parametrize('expression, message', [
    ('0 8-25 * * *', "hour field '8-25' .*: 25 is out of range 0-23"),
    ('0 1,2,99 * * *', "hour field '1,2,99' .*: 99 is out of range 0-23"),
    ('*/0 * * * *', "minute field '\\*/0' .*: the step '0' is not a "
                    "positive integer"),
    ('0 0 0 * *', "day-of-month field '0' .*: 0 is out of range 1-31"),
    ('0 1,,2 * * *', 'an empty item in a list'),
    ('0 0 * jan-foo *', "'jan-foo' is not a value, range or step"),
    ('H * * * *', 'hashed \\(H\\) values are not supported')])
def test_a_cron_error_names_the_field_and_the_value_at_fault(expression,
                                                             message):
    with pytest.raises(ticks.InvalidSchedule, match=message):
        ticks.check_cron(expression)


@pytest.mark.parametrize('policy', ticks.OVERLAP_POLICIES)
def test_overlap_policies_are_known(policy):
    assert ticks.check_overlap(policy) == policy


@pytest.mark.parametrize('policy', ['queue', '', None, 'SKIP'])
def test_an_unknown_overlap_policy_is_refused_with_the_known_ones(policy):
    with pytest.raises(ticks.InvalidSchedule,
                       match='skip, allow, cancel-previous, buffer-one'):
        ticks.check_overlap(policy)
