"""The REST API as a deployment runs it: the real ``barbican-retry-api``
(gunicorn, 2 workers) in noauth mode on 127.0.0.1, a real worker and
retry daemon over RabbitMQ, on each database, driven with ``requests``.

One API and one pair of daemons per database serve the whole module
(they start in a few seconds; the tests share them and keep to orders of
their own). Every response is checked against doc/api-ref/openapi.yaml.
"""

import http.client
import json
import re
import time
import urllib.parse
import uuid

import pytest
import requests

from tests.functional import databases
from tests.functional import processes
from tests.functional import rest_service
from tests import rest_spec

ALLOWED_HOST = rest_service.ALLOWED_HOST
CREATE = rest_service.CREATE
_code = rest_service.code
#: The timestamp that starts a log record.
RECORD_START = re.compile(r'\d{4}-\d\d-\d\d \d\d:\d\d:\d\d')


def _identity(project, roles, user):
    return {'X-Project-Id': project, 'X-Roles': roles, 'X-User-Id': user}


MEMBER_A = _identity('project-a', 'reader,member', 'member-a')
READER_A = _identity('project-a', 'reader', 'reader-a')
MEMBER_B = _identity('project-b', 'reader,member', 'member-b')
ADMIN = _identity('admin-project', 'reader,member,admin', 'admin')


@pytest.fixture(scope='module', params=databases.BACKENDS)
def api(request, tmp_path_factory):
    """One deployment per database: worker, retry daemon and the API."""
    yield from rest_service.deploy(
        request.param, tmp_path_factory.mktemp('rest-%s' % request.param),
        {'auth_strategy': 'noauth'})


def test_gunicorn_serves_with_two_workers(api):
    # The first worker may answer the healthcheck before gunicorn has
    # forked the second.
    processes.wait_for(lambda: len(api.daemon.children()) == 2, 60,
                       'the second gunicorn worker')
    document = api.get('/')
    assert document.status_code == 200
    assert document.json()['versions'][0]['max_version'] == '1.0'
    assert api.get('/healthcheck').status_code == 200


def test_an_order_created_over_http_reaches_active(api):
    global_id = 'req-%s' % uuid.uuid4()
    created = api.post('/v1/orders', dict(MEMBER_A, **{
        'X-OpenStack-Request-ID': global_id,
        'OpenStack-API-Version': 'retry 1.0'}), json=CREATE)
    assert created.status_code == 201
    assert created.headers['OpenStack-API-Version'] == 'retry 1.0'
    order = created.json()
    assert order['global_request_id'] == global_id
    assert order['request_id'] == created.headers['x-openstack-request-id']
    done = api.wait_for_status(order['id'], 'ACTIVE', READER_A)
    assert {step['status'] for step in done['steps']} == {'DONE'}
    # The worker's lines about the order carry the caller's request ids
    # (the lines that start a record: a DB error's [SQL: …] and
    # [parameters: …] lines continue the one that has them).
    about = [line for line in api.worker.log().splitlines()
             if order['id'] in line and RECORD_START.match(line)]
    assert about
    where = '[%s %s ' % (global_id, order['request_id'])
    assert [line for line in about if where not in line] == []
    history = api.get('/v1/orders/%s/history' % order['id'], READER_A)
    assert [(run['step'], run['result']) for run in
            history.json()['history']
            if run['step'] == 'process_type_order'] == [
        ('process_type_order', 'retry'), ('process_type_order', 'done')]
    # An ACTIVE order can be neither cancelled nor resumed.
    for action, code in (('cancel', 'retry.order_not_cancellable'),
                         ('resume', 'retry.order_not_resumable')):
        refused = api.post('/v1/orders/%s/%s' % (order['id'], action),
                           MEMBER_A)
        assert (refused.status_code, _code(refused)) == (409, code)


def test_idempotency_key_and_paging(api):
    key = {'Idempotency-Key': 'rest-%s' % uuid.uuid4()}
    first = api.post('/v1/orders', dict(MEMBER_A, **key), json=CREATE)
    again = api.post('/v1/orders', dict(MEMBER_A, **key), json=CREATE)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()['id'] == first.json()['id']
    conflict = api.post('/v1/orders', dict(MEMBER_A, **key),
                        json=dict(CREATE, priority=4))
    assert (conflict.status_code, _code(conflict)) == (
        409, 'retry.idempotency_conflict')
    seen, path = [], '/v1/orders?limit=1&type=certificate'
    while path and len(seen) < 1000:
        page = api.get(path, MEMBER_A).json()
        seen += [order['id'] for order in page['orders']]
        path = page.get('next')
    assert first.json()['id'] in seen
    assert len(seen) == len(set(seen))


def test_resume_an_error_order(api):
    # The test plugin's fanout: its first run of check_domains fails for
    # good, and the order goes to ERROR; run again, it passes.
    order = api.create(MEMBER_A, type='recording_fanout', meta={
        'fail_step': 'check_domains', 'fail_runs': 1})
    failed = api.wait_for_status(order['id'], 'ERROR', MEMBER_A)
    assert 'check_domains' in failed['error_reason']
    hidden = api.post('/v1/orders/%s/resume' % order['id'], MEMBER_B)
    assert (hidden.status_code, _code(hidden)) == (
        404, 'retry.order_not_found')
    reader = api.post('/v1/orders/%s/resume' % order['id'], READER_A)
    assert (reader.status_code, _code(reader)) == (403, 'retry.forbidden')
    resumed = api.post('/v1/orders/%s/resume' % order['id'], MEMBER_A)
    assert resumed.status_code == 200
    assert resumed.json()['status'] in ('PENDING', 'ACTIVE')
    api.wait_for_status(order['id'], 'ACTIVE', MEMBER_A)
    # One resume in its history, by the member; the refused ones left
    # nothing.
    assert _requested_by(api, order['id'], 'order:resume')['user_id'] == \
        'member-a'


def _requested_by(api, order_id, step):
    """Who asked, in the order's one history row of ``step``."""
    history = api.get('/v1/orders/%s/history' % order_id, READER_A)
    assert history.status_code == 200, history.text
    [row] = [run for run in history.json()['history'] if run['step'] == step]
    return json.loads(row['requested_by'])


def test_cancel_a_later_order_records_who_asked(api):
    order = api.create(MEMBER_A, not_before='2030-01-01T00:00:00Z')
    cancelled = api.post('/v1/orders/%s/cancel' % order['id'], MEMBER_A)
    assert cancelled.status_code == 200
    assert cancelled.json()['status'] == 'CANCELLED'
    assert 'user member-a' in cancelled.json()['error_reason']
    assert _requested_by(api, order['id'], 'order:cancel') == {
        'actor': 'user', 'user_id': 'member-a', 'project_id': 'project-a',
        'os_user': None,
        'request_id': cancelled.headers['x-openstack-request-id']}


def test_another_project_cannot_see_list_or_act_on_an_order(api):
    order = api.create(MEMBER_A, not_before='2030-01-01T00:00:00Z')
    for method, path in (('GET', '/v1/orders/%s'),
                         ('GET', '/v1/orders/%s/history'),
                         ('POST', '/v1/orders/%s/cancel'),
                         ('POST', '/v1/orders/%s/resume')):
        hidden = api.call(method, path % order['id'], MEMBER_B)
        assert (hidden.status_code, _code(hidden)) == (
            404, 'retry.order_not_found'), path
    listed = api.get('/v1/orders?limit=1000', MEMBER_B).json()['orders']
    assert order['id'] not in [found['id'] for found in listed]
    refused = api.get('/v1/orders?project_id=project-a', MEMBER_B)
    assert (refused.status_code, _code(refused)) == (403, 'retry.forbidden')
    assert api.get('/v1/orders/%s' % order['id'], MEMBER_A).json()[
        'status'] == 'PENDING'
    assert api.get('/v1/orders/%s' % order['id'], ADMIN).status_code == 200
    # A reader of the project reads it and cannot cancel it.
    reader = api.post('/v1/orders/%s/cancel' % order['id'], READER_A)
    assert (reader.status_code, _code(reader)) == (403, 'retry.forbidden')


def test_hostile_input_is_refused(api):
    def post(data, headers=None):
        return api.post('/v1/orders', dict(
            MEMBER_A, **{'Content-Type': 'application/json'},
            **(headers or {})), data=data)

    for data, status, code in (
            (b'{"type": "certificate"', 400, 'retry.invalid_json'),
            (b'"certificate"', 400, 'retry.invalid_json'),
            (b'{"type": "certificate", "meta": {"a": "\x01"}}', 400,
             'retry.invalid_json'),
            (b'{"type": "cert\\u001bificate"}', 400,
             'retry.invalid_characters'),
            (b'{"type": 42}', 400, 'retry.invalid_characters'),
            (b'{"type": "certificate", "priority": 99}', 400,
             'retry.invalid_request'),
            (b'{"type": "certificate", "callback_urls": "http://x"}', 400,
             'retry.invalid_request'),
            (b'{"type": "certificate", "callback_urls": '
             b'["https://elsewhere.example.com/"]}', 400,
             'retry.url_not_allowed'),
            (b'{"type": "certificate", "meta": {"unavailable_attempts": '
             b'-1}}', 400, 'retry.invalid_meta'),
            (b'{"type": "certificate", "meta": {"pad": "' + b'x' * 70000 +
             b'"}}', 413, 'retry.too_large')):
        refused = post(data)
        assert (refused.status_code, _code(refused)) == (status, code), \
            data[:80]
    too_large = _announce_a_large_body(api, 300000)
    assert (too_large.status, too_large.code) == (
        413, 'retry.request_too_large')
    version = post(b'{"type": "certificate"}',
                   {'OpenStack-API-Version': 'retry 7.0'})
    assert (version.status_code, _code(version)) == (
        406, 'retry.unsupported_version')
    # A body sent in chunks, without a length, is cut by the limiter.
    chunked = api.post('/v1/orders', dict(
        MEMBER_A, **{'Content-Type': 'application/json'}),
        data=iter([b'{"type": "certificate", "meta": {"pad": "',
                   b'x' * 300000, b'"}}']))
    assert (chunked.status_code, _code(chunked)) == (
        413, 'retry.request_too_large')
    nobody = api.get('/v1/orders', {'X-Roles': 'admin'})
    assert (nobody.status_code, _code(nobody)) == (
        401, 'retry.unauthenticated')


class _Refusal:
    def __init__(self, status, code):
        self.status = status
        self.code = code


def _announce_a_large_body(api, length):
    """POST headers that announce a body of ``length`` bytes, and read
    the answer before sending it: the limiter refuses it unread (a
    client still sending would see the connection closed under it)."""
    url = urllib.parse.urlsplit(api.base_url)
    connection = http.client.HTTPConnection(url.hostname, url.port,
                                            timeout=30)
    try:
        connection.putrequest('POST', '/v1/orders')
        for name, value in dict(MEMBER_A, **{
                'Content-Type': 'application/json',
                'Content-Length': str(length)}).items():
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        body = response.read()
    finally:
        connection.close()
    rest_spec.check('POST', '/v1/orders', response.status,
                    dict(response.getheaders()), body,
                    response.getheader('Content-Type').split(';')[0])
    [error] = json.loads(body)['errors']
    return _Refusal(response.status, error['code'])


def test_order_types_and_schedules(api):
    types = api.get('/v1/order-types', READER_A).json()['order_types']
    assert 'certificate' in [found['name'] for found in types]
    created = api.post('/v1/schedules', MEMBER_A, json={
        'type': 'certificate', 'every': '30d', 'cron': None})
    assert created.status_code == 201, created.text
    schedule = created.json()
    path = '/v1/schedules/%s' % schedule['id']
    assert api.get(path, READER_A).json()['every_seconds'] == 30 * 86400
    assert schedule['id'] in [found['id'] for found in api.get(
        '/v1/schedules', READER_A).json()['schedules']]
    assert api.get(path, MEMBER_B).status_code == 404
    assert api.call('DELETE', path, READER_A).status_code == 403
    assert api.call('DELETE', path, MEMBER_B).status_code == 404
    assert api.call('DELETE', path, MEMBER_A).status_code == 204
    assert api.get(path, MEMBER_A).status_code == 404


def test_a_schedule_in_a_time_zone_is_triggered_in_its_project_only(api):
    created = api.post('/v1/schedules', MEMBER_A, json={
        'type': 'certificate', 'cron': '30 2 * * *',
        'timezone': 'America/New_York', 'overlap': 'skip'})
    assert created.status_code == 201, created.text
    schedule = created.json()
    assert (schedule['timezone'], schedule['overlap']) == (
        'America/New_York', 'skip')
    trigger = '/v1/schedules/%s/trigger' % schedule['id']
    assert api.post(trigger, MEMBER_B).status_code == 404
    assert api.post(trigger, READER_A).status_code == 403
    triggered = api.post(trigger, MEMBER_A)
    assert triggered.status_code == 201, triggered.text
    order = triggered.json()
    assert order['schedule_id'] == schedule['id']
    assert api.get('/v1/orders/%s' % order['id'], MEMBER_B).status_code == \
        404
    shown = api.get('/v1/schedules/%s' % schedule['id'], READER_A).json()
    assert (shown['last_order_id'], shown['next_tick_at']) == (
        order['id'], schedule['next_tick_at'])
    refused = api.post('/v1/schedules', MEMBER_A, json={
        'type': 'certificate', 'cron': '0 3 * * *',
        'timezone': 'Mars/Olympus'})
    assert refused.status_code == 400
    assert 'Mars/Olympus' in refused.text


def test_notification_url_secrets(api):
    url = 'https://%s/%s' % (ALLOWED_HOST, uuid.uuid4().hex)
    assert api.post('/v1/notification-urls', MEMBER_A, json={
        'url': url, 'global': True}).status_code == 403
    added = api.post('/v1/notification-urls', ADMIN, json={
        'url': url, 'project_id': 'project-a'})
    assert added.status_code == 201, added.text
    secret = added.json()['generated_secret']
    assert secret.startswith('whsec_')
    listed = api.get('/v1/notification-urls', ADMIN)
    assert secret not in listed.text
    [shown] = [found for found in listed.json()['notification_urls']
               if found['url'] == url]
    assert (shown['has_secret'], shown['project_id']) == (True, 'project-a')
    chosen = 'whsec_' + 'QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUE='
    rotated = api.call('PUT', '/v1/notification-urls/%d/secret'
                       % shown['id'], ADMIN,
                       json={'secret': chosen, 'keep_old_for_seconds': 60})
    assert rotated.status_code == 200, rotated.text
    assert rotated.json()['generated_secret'] is None
    owner = api.call('PUT', '/v1/notification-urls/%d/owner' % shown['id'],
                     ADMIN, json={'project_id': 'project-b'})
    assert owner.json()['project_id'] == 'project-b'
    # Project A may no longer name it.
    refused = api.post('/v1/orders', MEMBER_A, json=dict(
        CREATE, callback_urls=[url]))
    assert (refused.status_code, _code(refused)) == (
        400, 'retry.url_not_allowed')


def test_the_development_server_serves_one_process(api):
    if api.backend != 'sqlite':
        pytest.skip('the server, not the database, is under test')
    port = processes.free_port()
    config = api.deployment.directory / 'development.conf'
    config.write_text(open(api.deployment.config).read().replace(
        'bind_port = %s' % api.base_url.rsplit(':', 1)[1],
        'bind_port = %d' % port))
    daemon = processes.Daemon('barbican-retry-api', config,
                              api.deployment.directory / 'dev.log',
                              env=api.deployment.env,
                              args=['--development']).start()
    api.deployment.daemons.append(daemon)
    base_url = 'http://127.0.0.1:%d' % port
    processes.wait_for(lambda: processes.api_healthy(base_url, daemon), 60,
                       'the development server answering')
    assert daemon.children() == []
    created = requests.post(base_url + '/v1/orders', headers=MEMBER_A,
                            json=CREATE, timeout=30)
    assert rest_spec.check_requests(created).status_code == 201
    daemon.stop()


def test_the_api_stops_on_sigterm(api):
    # Last in the module: gunicorn's master stops its workers and exits.
    api.close()
    started = time.monotonic()
    assert api.daemon.stop(timeout=40) == 0
    assert time.monotonic() - started < 40
