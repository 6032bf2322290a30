"""``/v1/schedules`` and ``/v1/notification-urls`` over the real APIs on
a SQLite database."""

from cryptography import fernet

from tests.unit.worker.rest import conftest
from tests.unit.worker.rest.conftest import error_code

MEMBER = conftest.MEMBER
ADMIN = conftest.ADMIN


def test_schedules_create_list_show_delete(http):
    created = http.post('/v1/schedules', headers=MEMBER, json={
        'type': 'certificate', 'meta': {'unavailable_attempts': 1},
        'every': '1h'})
    assert created.status_code == 201
    schedule = created.get_json()
    assert (schedule['every_seconds'], schedule['project_id']) == (
        3600, conftest.PROJECT_A)
    path = '/v1/schedules/%s' % schedule['id']
    assert http.get(path, headers=conftest.READER).get_json()['id'] == \
        schedule['id']
    assert [found['id'] for found in http.get(
        '/v1/schedules', headers=MEMBER).get_json()['schedules']] == [
            schedule['id']]
    hidden = http.get(path, headers=conftest.MEMBER_B)
    assert (hidden.status_code, error_code(hidden)) == (
        404, 'retry.schedule_not_found')
    assert http.open('DELETE', path,
                     headers=conftest.MEMBER_B).status_code == 404
    assert http.open('DELETE', path, headers=MEMBER).status_code == 204
    assert http.get(path, headers=MEMBER).status_code == 404


def test_an_invalid_schedule_is_400(http):
    for body, code in (
            ({'type': 'certificate', 'every': '3 fortnights'},
             'retry.invalid_schedule'),
            ({'type': 'certificate', 'cron': '61 * * * *'},
             'retry.invalid_schedule'),
            ({'type': 'certificate', 'every': '1h', 'cron': '0 3 * * *'},
             'retry.invalid_schedule')):
        refused = http.post('/v1/schedules', headers=MEMBER, json=body)
        assert refused.status_code == 400, body
        assert error_code(refused) in (code, 'retry.invalid_request'), body


def test_a_schedule_in_a_time_zone_with_an_overlap_policy(http):
    created = http.post('/v1/schedules', headers=MEMBER, json={
        'type': 'certificate', 'cron': '30 2 * * *',
        'timezone': 'Europe/Paris', 'overlap': 'buffer-one'})
    assert created.status_code == 201
    schedule = created.get_json()
    assert (schedule['timezone'], schedule['overlap'],
            schedule['buffered_tick_at']) == ('Europe/Paris', 'buffer-one',
                                              None)
    # 02:30 in Paris is 00:30 or 01:30 UTC, never 02:30.
    assert schedule['next_tick_at'][11:16] in ('00:30', '01:30')
    default = http.post('/v1/schedules', headers=MEMBER, json={
        'type': 'certificate', 'every': '1h'}).get_json()
    assert (default['timezone'], default['overlap']) == ('UTC', 'allow')


def test_a_wrong_zone_overlap_or_cron_value_is_400_naming_it(http):
    for body, named in (
            ({'cron': '0 3 * * *', 'timezone': 'Europe/Pariss'},
             "unknown time zone 'Europe/Pariss'"),
            ({'every': '1h', 'timezone': 'Europe/Paris'},
             'cron expression only'),
            ({'every': '1h', 'overlap': 'queue'}, "not 'queue'"),
            ({'cron': '0 8-25 * * *'}, '25 is out of range 0-23')):
        refused = http.post('/v1/schedules', headers=MEMBER,
                            json=dict(body, type='certificate'))
        assert (refused.status_code, error_code(refused)) == (
            400, 'retry.invalid_schedule'), body
        assert named in refused.get_json()['errors'][0]['detail'], body


def test_trigger_makes_an_order_now_in_the_schedule_s_project_only(http):
    schedule = http.post('/v1/schedules', headers=MEMBER, json={
        'type': 'certificate', 'meta': {'unavailable_attempts': 1},
        'every': '1h'}).get_json()
    path = '/v1/schedules/%s/trigger' % schedule['id']
    # Another project's member, and a reader, cannot.
    hidden = http.post(path, headers=conftest.MEMBER_B)
    assert (hidden.status_code, error_code(hidden)) == (
        404, 'retry.schedule_not_found')
    assert http.post(path, headers=conftest.READER).status_code == 403
    triggered = http.post(path, headers=MEMBER)
    assert triggered.status_code == 201
    order = triggered.get_json()
    assert triggered.headers['Location'].endswith(
        '/v1/orders/%s' % order['id'])
    assert (order['schedule_id'], order['project_id'], order['status']) == (
        schedule['id'], conftest.PROJECT_A, 'PENDING')
    shown = http.get('/v1/schedules/%s' % schedule['id'],
                     headers=MEMBER).get_json()
    assert shown['last_order_id'] == order['id']
    assert shown['next_tick_at'] == schedule['next_tick_at']
    assert http.get('/v1/orders/%s' % order['id'],
                    headers=conftest.MEMBER_B).status_code == 404
    # The admin triggers any project's schedule.
    assert http.post(path, headers=ADMIN).status_code == 201


def test_a_secret_is_set_rotated_and_never_read_back(
        tmp_path, rest_conf, http):
    key_file = tmp_path / 'keys'
    key_file.write_text(fernet.Fernet.generate_key().decode() + '\n')
    rest_conf.set_override('secret_key_file', str(key_file),
                           group='notifications')
    added = http.post('/v1/notification-urls', headers=ADMIN, json={
        'url': 'https://hooks.example.org/a', 'project_id':
        conftest.PROJECT_A})
    assert added.status_code == 201
    url = added.get_json()
    assert url['generated_secret'].startswith('whsec_')
    assert (url['has_secret'], url['project_id']) == (True,
                                                      conftest.PROJECT_A)
    listed = http.get('/v1/notification-urls', headers=ADMIN).get_json()
    [shown] = listed['notification_urls']
    assert url['generated_secret'] not in str(listed)
    assert shown['has_secret'] is True
    rotated = http.open('PUT', '/v1/notification-urls/%d/secret'
                        % url['id'], headers=ADMIN,
                        json={'keep_old_for_seconds': 600})
    assert rotated.status_code == 200
    assert rotated.get_json()['generated_secret'] not in (
        None, url['generated_secret'])
    assert rotated.get_json()['previous_secret_until'] is not None
    owned = http.open('PUT', '/v1/notification-urls/%d/owner' % url['id'],
                      headers=ADMIN, json={'global': True})
    assert owned.get_json()['project_id'] is None
    assert 'generated_secret' not in owned.get_json()


def test_url_refusals(http):
    refused = http.post('/v1/notification-urls', headers=ADMIN, json={
        'url': 'https://elsewhere.example.com/', 'global': True})
    assert (refused.status_code, error_code(refused)) == (
        400, 'retry.invalid_request')
    missing = http.open('PUT', '/v1/notification-urls/999/owner',
                        headers=ADMIN, json={'global': True})
    assert (missing.status_code, error_code(missing)) == (
        404, 'retry.notification_url_not_found')
    # No [notifications] secret_key_file: the server cannot store one.
    unsealed = http.post('/v1/notification-urls', headers=ADMIN, json={
        'url': 'https://hooks.example.org/b', 'global': True})
    assert (unsealed.status_code, error_code(unsealed)) == (
        503, 'retry.not_configured')
