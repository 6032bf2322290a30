"""The REST API under a real Keystone: ``barbican-retry-api`` (gunicorn)
with ``[api] auth_strategy = keystone`` and keystonemiddleware's
``auth_token`` validating the tokens of the suite's personas
(tests/functional/keystone.py) with Keystone, beside a real worker and
retry daemon, on each database.

Route by route: a reader reads and changes nothing (403); a member of
project A acts on A's orders and finds none of B's (404, never 403, so
that existence is not revealed; never in its lists); the project comes
from the token, never from the body, the query or a header the caller
sets; an expired or revoked token is refused (401); the admin sees
every project and alone manages the notification URLs.

One API per database serves the module, and each persona's token is
fetched once per module (the middleware caches what it validated).
"""

import json
import pathlib
import subprocess  # nosec B404: the documented session runs curl
import uuid

import pytest

from tests.functional import databases
from tests.functional import processes
from tests.functional import rest_service

LATER = '2030-01-01T00:00:00Z'
ORDER_ROUTES = (('GET', '/v1/orders/%s'),
                ('GET', '/v1/orders/%s/history'),
                ('POST', '/v1/orders/%s/cancel'),
                ('POST', '/v1/orders/%s/resume'))
PERSONAS = ('a_reader', 'a_member', 'b_reader', 'b_member', 'admin')
REST_DOC = pathlib.Path(processes.REPO_ROOT) / 'doc' / 'rest.md'
SESSION_HEADING = '### With a Keystone token'


@pytest.fixture(scope='module')
def callers(keystone, personas):
    """The ``X-Auth-Token`` header of each persona, by its name."""
    return {name: {'X-Auth-Token': keystone.token(getattr(personas, name))}
            for name in PERSONAS}


@pytest.fixture(scope='module', params=databases.BACKENDS)
def api(request, tmp_path_factory, keystone, personas):
    """One deployment per database, its API validating tokens with the
    real Keystone as the service persona."""
    yield from rest_service.deploy(
        request.param,
        tmp_path_factory.mktemp('rest-keystone-%s' % request.param),
        {'auth_strategy': 'keystone'},
        {'keystone_authtoken': keystone.authtoken_options(
            personas.service)})


def _ids(response):
    assert response.status_code == 200, response.text
    return {order['id'] for order in response.json()['orders']}


def _refused(response, status, code):
    assert (response.status_code, rest_service.code(response)) == (
        status, code), response.text


def test_a_member_order_reaches_active_in_the_token_project(
        api, callers, personas):
    member, reader = callers['a_member'], callers['a_reader']
    order = api.create(member)
    assert order['project_id'] == personas.project_a
    done = api.wait_for_status(order['id'], 'ACTIVE', reader)
    assert {step['status'] for step in done['steps']} == {'DONE'}
    history = api.get('/v1/orders/%s/history' % order['id'], reader)
    assert 'process_type_order' in [
        run['step'] for run in history.json()['history']]
    assert order['id'] in _ids(api.get('/v1/orders?limit=1000', reader))
    types = api.get('/v1/order-types', reader).json()['order_types']
    assert 'certificate' in [found['name'] for found in types]


def test_a_reader_reads_but_cannot_change(api, callers):
    reader = callers['a_reader']
    order = api.create(callers['a_member'], not_before=LATER)
    assert api.get('/v1/orders/%s' % order['id'], reader).json()[
        'status'] == 'PENDING'
    _refused(api.post('/v1/orders', reader, json=rest_service.CREATE),
             403, 'retry.forbidden')
    for action in ('cancel', 'resume'):
        _refused(api.post('/v1/orders/%s/%s' % (order['id'], action),
                          reader), 403, 'retry.forbidden')
    _refused(api.post('/v1/schedules', reader, json={
        'type': 'certificate', 'every': '30d'}), 403, 'retry.forbidden')
    assert api.get('/v1/orders/%s' % order['id'], reader).json()[
        'status'] == 'PENDING'


def test_another_project_finds_nothing_of_a(api, callers, personas):
    order = api.create(callers['a_member'], not_before=LATER)
    for method, path in ORDER_ROUTES:
        _refused(api.call(method, path % order['id'], callers['b_member']),
                 404, 'retry.order_not_found')
    for name in ('b_member', 'b_reader'):
        assert order['id'] not in _ids(
            api.get('/v1/orders?limit=1000', callers[name]))
    # B's reader may not cancel or resume at all: 403 for A's order as
    # for one that does not exist, so that nothing is revealed either.
    for method, path in ORDER_ROUTES:
        answers = [api.call(method, path % order_id, callers['b_reader'])
                   for order_id in (order['id'], str(uuid.uuid4()))]
        expected = (403, 'retry.forbidden') if method == 'POST' else (
            404, 'retry.order_not_found')
        for answer in answers:
            _refused(answer, *expected)
    # Asking for A by name is refused, not answered.
    _refused(api.get('/v1/orders?project_id=%s' % personas.project_a,
                     callers['b_member']), 403, 'retry.forbidden')
    # A's order is untouched by B's attempts.
    assert api.get('/v1/orders/%s' % order['id'], callers[
        'a_member']).json()['status'] == 'PENDING'


def test_the_project_comes_from_the_token_only(api, callers, personas):
    member = callers['a_member']
    refused = api.post('/v1/orders', member, json=dict(
        rest_service.CREATE, project_id=personas.project_b))
    _refused(refused, 400, 'retry.invalid_request')
    # The identity headers a caller sends are auth_token's to set.
    spoofed = dict(member, **{'X-Project-Id': personas.project_b,
                              'X-Roles': 'admin,member,reader',
                              'X-User-Id': personas.b_member.user_id})
    order = api.create(spoofed, not_before=LATER)
    assert order['project_id'] == personas.project_a
    hidden = api.create(callers['b_member'], not_before=LATER)
    _refused(api.get('/v1/orders/%s' % hidden['id'], spoofed), 404,
             'retry.order_not_found')
    _refused(api.get('/v1/orders?project_id=%s' % personas.project_b,
                     spoofed), 403, 'retry.forbidden')
    # The idempotency key is the project's: B's same key is B's order.
    key = {'Idempotency-Key': 'shared-%s' % uuid.uuid4()}
    mine = api.create(dict(member, **key), not_before=LATER)
    theirs = api.post('/v1/orders', dict(callers['b_member'], **key),
                      json=dict(rest_service.CREATE, not_before=LATER))
    assert theirs.status_code == 201
    assert theirs.json()['id'] != mine['id']
    assert theirs.json()['project_id'] == personas.project_b


def _who_asked(api, order_id, caller, step):
    """``requested_by`` of the order's one history row of ``step``
    (``order:cancel`` or ``order:resume``), as ``caller`` reads it."""
    history = api.get('/v1/orders/%s/history' % order_id, caller)
    assert history.status_code == 200, history.text
    [row] = [run for run in history.json()['history']
             if run['step'] == step]
    assert row['result'] == 'requested'
    return json.loads(row['requested_by'])


def test_cancel_records_the_token_user(api, callers, personas):
    order = api.create(callers['a_member'], not_before=LATER)
    cancelled = api.post('/v1/orders/%s/cancel' % order['id'],
                         callers['a_member'])
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()['status'] == 'CANCELLED'
    reason = cancelled.json()['error_reason']
    assert 'user %s of project %s' % (personas.a_member.user_id,
                                      personas.project_a) in reason
    # The order's history records who asked, as the token says, and the
    # project's reader reads it.
    assert _who_asked(api, order['id'], callers['a_reader'],
                      'order:cancel') == {
        'actor': 'user', 'user_id': personas.a_member.user_id,
        'project_id': personas.project_a, 'os_user': None,
        'request_id': cancelled.headers['x-openstack-request-id']}


def test_a_member_resumes_an_error_order(api, callers, personas):
    # The test plugin's fanout: its first run of check_domains fails for
    # good, and the order goes to ERROR; run again, it passes.
    member = callers['a_member']
    order = api.create(member, type='recording_fanout', meta={
        'fail_step': 'check_domains', 'fail_runs': 1})
    api.wait_for_status(order['id'], 'ERROR', member)
    _refused(api.post('/v1/orders/%s/resume' % order['id'],
                      callers['b_member']), 404, 'retry.order_not_found')
    _refused(api.post('/v1/orders/%s/resume' % order['id'],
                      callers['a_reader']), 403, 'retry.forbidden')
    resumed = api.post('/v1/orders/%s/resume' % order['id'], member)
    assert resumed.status_code == 200, resumed.text
    api.wait_for_status(order['id'], 'ACTIVE', member)
    # Recorded once, with the member's user id from its token: the
    # refused attempts left nothing.
    assert _who_asked(api, order['id'], member, 'order:resume') == {
        'actor': 'user', 'user_id': personas.a_member.user_id,
        'project_id': personas.project_a, 'os_user': None,
        'request_id': resumed.headers['x-openstack-request-id']}


def test_the_admin_sees_and_acts_on_every_project(api, callers, personas):
    admin = callers['admin']
    in_a = api.create(callers['a_member'], not_before=LATER)
    in_b = api.create(callers['b_member'], not_before=LATER)
    every = _ids(api.get('/v1/orders?limit=1000', admin))
    assert {in_a['id'], in_b['id']} <= every
    only_a = _ids(api.get('/v1/orders?limit=1000&project_id=%s'
                          % personas.project_a, admin))
    assert in_a['id'] in only_a and in_b['id'] not in only_a
    assert api.get('/v1/orders/%s/history' % in_b['id'],
                   admin).status_code == 200
    cancelled = api.post('/v1/orders/%s/cancel' % in_b['id'], admin)
    assert cancelled.json()['status'] == 'CANCELLED'
    assert personas.admin.user_id in cancelled.json()['error_reason']
    who = _who_asked(api, in_b['id'], callers['b_reader'], 'order:cancel')
    assert (who['user_id'], who['project_id']) == (
        personas.admin.user_id, personas.admin.project_id)


def test_only_the_admin_manages_notification_urls(api, callers, personas):
    url = 'https://%s/%s' % (rest_service.ALLOWED_HOST, uuid.uuid4().hex)
    body = {'url': url, 'project_id': personas.project_a}
    for name in ('a_member', 'a_reader'):
        _refused(api.post('/v1/notification-urls', callers[name],
                          json=body), 403, 'retry.forbidden')
        _refused(api.get('/v1/notification-urls', callers[name]), 403,
                 'retry.forbidden')
    added = api.post('/v1/notification-urls', callers['admin'], json=body)
    assert added.status_code == 201, added.text
    [shown] = [found for found in api.get(
        '/v1/notification-urls', callers['admin']).json()[
            'notification_urls'] if found['url'] == url]
    _refused(api.call('PUT', '/v1/notification-urls/%d/secret' % shown['id'],
                      callers['a_member'], json={}), 403, 'retry.forbidden')
    _refused(api.call('PUT', '/v1/notification-urls/%d/owner' % shown['id'],
                      callers['a_member'], json={'global': True}), 403,
             'retry.forbidden')
    # The URL is now A's: a member of A may name it in an order.
    assert api.create(callers['a_member'], not_before=LATER,
                      callback_urls=[url])['status'] == 'PENDING'


@pytest.fixture(scope='module')
def expired(keystone, personas):
    """A token of A's member that Keystone issued and that has expired."""
    return keystone.expired_token(personas.a_member)


def test_no_token_or_a_refused_token_is_401(api, keystone, personas,
                                            expired):
    revoked = keystone.token(personas.a_member)
    keystone.revoke(revoked)
    for headers in ({}, {'X-Auth-Token': 'not-a-token'},
                    {'X-Auth-Token': expired}, {'X-Auth-Token': revoked}):
        for method, path in (('GET', '/v1/orders'),
                             ('POST', '/v1/orders')):
            refused = api.call(method, path, headers,
                               json=rest_service.CREATE)
            assert refused.status_code == 401, (headers, refused.text)
            assert 'Keystone uri' in refused.headers['WWW-Authenticate']
    # The version document and the healthcheck need no token.
    assert api.get('/').status_code == 200
    assert api.get('/healthcheck').status_code == 200


def documented_session():
    """The commands of doc/rest.md's curl session with a Keystone token
    (its ``console`` block's ``$`` lines and their continuations)."""
    text = REST_DOC.read_text()
    section = text[text.index(SESSION_HEADING):]
    block = section[section.index('```console\n'):].split('\n')[1:]
    commands, current = [], None
    for line in block[:block.index('```')]:
        if line.startswith('$ '):
            current = [line[2:]]
            commands.append(current)
        elif current is not None and current[-1].endswith('\\'):
            current.append(line)
        else:
            current = None
    return ['\n'.join(command) for command in commands]


def test_the_documented_curl_session_reaches_active(api, keystone,
                                                    personas):
    if api.backend != 'sqlite':
        pytest.skip('the documented session, not the database, is under '
                    'test')
    member = personas.a_member
    script = '\n'.join(documented_session())
    for example, real in (
            ('http://keystone.example.org:5000/v3', keystone.url),
            ('http://retry.example.org:9312', api.base_url),
            ('"name": "alice"', '"name": "%s"' % member.username),
            ('alice-password', member.password),
            ('6d3c3ff4ba9f4d8e9ff3a10b0a1f0c55', member.project_id),
            ('cert-request-42', 'doc-%s' % uuid.uuid4())):
        assert example in script
        script = script.replace(example, real)
    ran = subprocess.run(  # nosec B603 B607: the documented commands
        ['timeout', '90', 'bash', '-e', '-o', 'pipefail', '-c', script],
        capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    decoder = json.JSONDecoder()
    shown, end = decoder.raw_decode(ran.stdout)
    history, _ = decoder.raw_decode(ran.stdout[end:].strip())
    assert (shown['status'], shown['project_id']) == (
        'ACTIVE', personas.project_a)
    assert history['history']


def test_schedules_by_persona(api, callers):
    created = api.post('/v1/schedules', callers['a_member'], json={
        'type': 'certificate', 'every': '30d'})
    assert created.status_code == 201, created.text
    path = '/v1/schedules/%s' % created.json()['id']
    assert api.get(path, callers['a_reader']).status_code == 200
    for method in ('GET', 'DELETE'):
        _refused(api.call(method, path, callers['b_member']), 404,
                 'retry.schedule_not_found')
    assert created.json()['id'] not in [
        found['id'] for found in api.get(
            '/v1/schedules', callers['b_member']).json()['schedules']]
    assert created.json()['id'] in [
        found['id'] for found in api.get(
            '/v1/schedules', callers['admin']).json()['schedules']]
    _refused(api.call('DELETE', path, callers['a_reader']), 403,
             'retry.forbidden')
    _refused(api.post(path + '/trigger', callers['b_member']), 404,
             'retry.schedule_not_found')
    _refused(api.post(path + '/trigger', callers['a_reader']), 403,
             'retry.forbidden')
    for caller in ('a_member', 'admin'):
        triggered = api.post(path + '/trigger', callers[caller])
        assert triggered.status_code == 201, triggered.text
        assert triggered.json()['schedule_id'] == created.json()['id']
    assert api.call('DELETE', path, callers['a_member']).status_code == 204
    _refused(api.get(path, callers['a_member']), 404,
             'retry.schedule_not_found')


def test_project_quotas_by_persona(api, callers, personas):
    quota_a = '/v1/project-quotas/%s' % personas.project_a
    admin, member = callers['admin'], callers['a_member']
    listed = api.get('/v1/orders?status=PENDING&limit=1000&project_id=%s'
                     % personas.project_a, admin)
    pending = len(listed.json()['orders'])
    shown = api.get(quota_a, callers['a_reader'])
    assert shown.json()['project_id'] == personas.project_a, shown.text
    _refused(api.get(quota_a, callers['b_member']), 403, 'retry.forbidden')
    _refused(api.call('PUT', quota_a, member,
                      json={'pending_orders': 1000}), 403, 'retry.forbidden')
    set_quota = api.call('PUT', quota_a, admin,
                         json={'pending_orders': pending + 1})
    assert set_quota.json()['override'] == pending + 1, set_quota.text
    try:
        assert api.create(member, not_before=LATER)['status'] == 'PENDING'
        over = api.post('/v1/orders', member, json=rest_service.CREATE)
        _refused(over, 429, 'retry.project_quota_exceeded')
        assert over.headers['Retry-After']
        # Project B is not bound by A's quota.
        assert api.create(callers['b_member'], not_before=LATER)[
            'project_id'] == personas.project_b
    finally:
        dropped = api.call('DELETE', quota_a, admin)
    assert dropped.status_code == 204
    assert api.get(quota_a, admin).json()['override'] is None


def test_signals_by_persona(api, callers):
    order = api.create(callers['a_member'], not_before=LATER)
    path = '/v1/orders/%s/signals' % order['id']
    body = {'name': 'certificate.issued', 'signal_id': 's1'}
    _refused(api.post(path, callers['b_member'], json=body), 404,
             'retry.order_not_found')
    for name in ('a_reader', 'b_reader'):
        _refused(api.post(path, callers[name], json=body), 403,
                 'retry.forbidden')
    sent = api.post(path, callers['a_member'], json=body)
    assert sent.status_code == 202, sent.text
    again = api.post(path, callers['admin'], json=body)
    assert (again.status_code, again.json()['repeated']) == (200, True)
    assert again.json()['created_at'] == sent.json()['created_at']


def test_pauses_by_persona(api, callers, personas):
    member, admin = callers['a_member'], callers['admin']
    order = api.create(member, not_before=LATER)
    path = '/v1/pauses/order/%s' % order['id']
    _refused(api.call('PUT', path, callers['a_reader']), 403,
             'retry.forbidden')
    for method in ('PUT', 'DELETE'):
        _refused(api.call(method, path, callers['b_member']), 404,
                 'retry.order_not_found')
    paused = api.call('PUT', path, member, json={'reason': 'checking'})
    assert paused.status_code == 200, paused.text
    assert paused.json()['project_id'] == personas.project_a
    shown = api.get('/v1/orders/%s' % order['id'], callers['a_reader'])
    assert [pause['reason'] for pause in shown.json()['paused_by']] == [
        'checking']
    # Only the admin pauses what spans projects, and lists the pauses.
    key = '/v1/pauses/resource/keystone-test:%s' % uuid.uuid4().hex
    _refused(api.call('PUT', key, member), 403, 'retry.forbidden')
    _refused(api.get('/v1/pauses', member), 403, 'retry.forbidden')
    assert api.call('PUT', key, admin).status_code == 200
    listed = api.get('/v1/pauses', admin).json()['pauses']
    assert {order['id'], key.rsplit('/', 1)[1]} <= {
        pause['name'] for pause in listed}
    assert api.call('DELETE', key, admin).status_code == 204
    assert api.call('DELETE', path, member).status_code == 204
    assert 'paused_by' not in api.get('/v1/orders/%s' % order['id'],
                                      member).json()
