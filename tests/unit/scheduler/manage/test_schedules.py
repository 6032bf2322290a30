"""``barbican-retry-manage schedule create --timezone --overlap`` and
``schedule trigger``, run as an operator runs them, on SQLite."""

import json


def _json(done):
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _create(operator, *args):
    return operator.manage('schedule', 'create', '--type', 'certificate',
                           '--project', 'p', '-f', 'json', *args)


def test_create_in_a_time_zone_with_an_overlap_policy(operator):
    schedule = _json(_create(operator, '--cron', '30 2 * * *', '--timezone',
                             'America/New_York', '--overlap', 'skip'))
    assert (schedule['timezone'], schedule['overlap'],
            schedule['buffered_tick_at']) == ('America/New_York', 'skip',
                                              None)
    # 02:30 in New York is 06:30 or 07:30 UTC.
    assert schedule['next_tick_at'][11:16] in ('06:30', '07:30')
    shown = _json(operator.manage('schedule', 'show', schedule['id'],
                                  '-f', 'json'))
    assert shown == schedule
    [listed] = _json(operator.manage('schedule', 'list', '-f', 'json'))
    assert (listed['timezone'], listed['overlap']) == (
        'America/New_York', 'skip')


def test_the_defaults_are_utc_and_allow(operator):
    schedule = _json(_create(operator, '--every', '1h'))
    assert (schedule['timezone'], schedule['overlap']) == ('UTC', 'allow')


def test_what_is_wrong_is_named_in_one_line_and_nothing_is_written(
        operator):
    for args, named in (
            (('--cron', '0 3 * * *', '--timezone', 'Europe/Pariss'),
             "unknown time zone 'Europe/Pariss'"),
            (('--every', '1h', '--timezone', 'Europe/Paris'),
             'cron expression only'),
            (('--every', '1h', '--overlap', 'queue'), "invalid choice"),
            (('--cron', '0 1,2,99 * * *'),
             "hour field '1,2,99'"),
            (('--cron', '0 1,2,99 * * *'), '99 is out of range 0-23')):
        refused = _create(operator, *args)
        assert refused.returncode != 0, args
        assert named in refused.stderr, (args, refused.stderr)
    assert _json(operator.manage('schedule', 'list', '-f', 'json')) == []


def test_trigger_creates_an_order_now_and_keeps_the_next_tick(operator):
    schedule = _json(_create(operator, '--every', '1h', '--meta',
                             '{"unavailable_attempts": 1}'))
    order = _json(operator.manage('schedule', 'trigger', schedule['id'],
                                  '-f', 'json'))
    assert (order['schedule_id'], order['project_id'], order['status'],
            order['type']) == (schedule['id'], 'p', 'PENDING', 'certificate')
    shown = _json(operator.manage('schedule', 'show', schedule['id'],
                                  '-f', 'json'))
    assert shown['next_tick_at'] == schedule['next_tick_at']
    assert shown['last_order_id'] == order['id']
    missing = operator.manage('schedule', 'trigger', 'no-such-schedule')
    assert missing.returncode != 0 and 'no schedule' in missing.stderr
