"""``/v1/orders`` over the real ``worker.api`` on the SQLite
database: routing, request parsing, idempotency, paging, request ids."""

import json
import uuid

from oslo_utils import timeutils

from tests.unit.worker.rest import conftest
from tests.unit.worker.rest.conftest import error_code

MEMBER = conftest.MEMBER
CREATE = {'type': 'certificate', 'meta': {'unavailable_attempts': 1}}


def _create(http, headers=MEMBER, **body):
    return http.post('/v1/orders', headers=headers, json=dict(CREATE,
                                                              **body))


def test_a_created_order_is_201_with_its_location_and_the_show_fields(http):
    created = _create(http, priority=3)
    assert created.status_code == 201
    order = created.get_json()
    assert created.headers['Location'].endswith('/v1/orders/%s'
                                                % order['id'])
    assert order['status'] == 'PENDING'
    assert order['project_id'] == conftest.PROJECT_A
    assert order['priority'] == 3
    # As order show -f json prints it: meta as JSON text, steps a list.
    assert order['meta'] == '{"unavailable_attempts": 1}'
    assert [step['name'] for step in order['steps']] == [
        'process_type_order', 'check_certificate_status']
    shown = http.get('/v1/orders/%s' % order['id'], headers=MEMBER)
    assert shown.status_code == 200
    assert shown.get_json()['id'] == order['id']


def test_the_same_idempotency_key_returns_the_order_with_200(http):
    headers = dict(MEMBER, **{'Idempotency-Key': 'cert-42'})
    first = _create(http, headers)
    again = _create(http, headers)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.get_json()['id'] == first.get_json()['id']
    conflict = http.post('/v1/orders', headers=headers,
                         json=dict(CREATE, priority=5))
    assert conflict.status_code == 409
    assert error_code(conflict) == 'retry.idempotency_conflict'
    assert conflict.get_json()['errors'][0]['source'] == {
        'order_id': first.get_json()['id']}


def test_the_callers_request_ids_are_kept_with_the_order(http):
    global_id = 'req-%s' % uuid.uuid4()
    created = _create(http, dict(MEMBER,
                                 **{'X-OpenStack-Request-ID': global_id}))
    order = created.get_json()
    assert order['global_request_id'] == global_id
    # The response's request id is the one the order was created under.
    assert order['request_id'] == created.headers['x-openstack-request-id']


def test_the_project_comes_from_the_headers_never_from_the_body(http):
    smuggled = http.post('/v1/orders', headers=MEMBER,
                         json=dict(CREATE, project_id=conftest.PROJECT_B))
    assert smuggled.status_code == 400
    assert error_code(smuggled) == 'retry.invalid_request'
    listed = http.get('/v1/orders?project_id=%s' % conftest.PROJECT_B,
                      headers=MEMBER)
    assert listed.status_code == 403


def test_an_invalid_meta_names_its_path_and_rule(http):
    refused = http.post('/v1/orders', headers=MEMBER, json={
        'type': 'certificate', 'meta': {'unavailable_attempts': 'twice'}})
    assert refused.status_code == 400
    [error] = refused.get_json()['errors']
    assert error['code'] == 'retry.invalid_meta'
    assert error['source'] == {'path': '$.unavailable_attempts',
                               'rule': 'type'}
    assert error['request_id'] == refused.headers['x-openstack-request-id']


def test_hostile_bodies_are_refused_with_their_codes(http):
    def post(data, content_type='application/json'):
        return http.post('/v1/orders', headers=MEMBER, data=data,
                         content_type=content_type)

    for data, status, code in (
            (b'{"type": ', 400, 'retry.invalid_json'),
            (b'[1, 2]', 400, 'retry.invalid_json'),
            (b'\xff\xfe', 400, 'retry.invalid_json'),
            (b'{"type": "certificate", "priority": NaN}', 400,
             'retry.invalid_json'),
            (b'{"meta": {}}', 400, 'retry.invalid_request'),
            (b'{"type": "cert\\u0000"}', 400, 'retry.invalid_characters'),
            (b'{"type": "certificate", "priority": "high"}', 400,
             'retry.invalid_request'),
            (b'{"type": "certificate", "meta": []}', 400,
             'retry.invalid_meta'),
            (b'{"type": "nope"}', 400, 'retry.unknown_order_type'),
            (b'{"type": "certificate", "not_before": "tomorrow"}', 400,
             'retry.invalid_request'),
            (b'{"type": "certificate", "not_before": '
             b'"2026-12-01T09:00:00"}', 400, 'retry.invalid_request')):
        refused = post(data)
        assert (refused.status_code, error_code(refused)) == (status, code), \
            data
    text = post(b'{"type": "certificate"}', 'text/plain')
    assert (text.status_code, error_code(text)) == (
        415, 'retry.unsupported_media_type')


def test_a_meta_over_max_meta_bytes_is_413(http):
    huge = http.post('/v1/orders', headers=MEMBER, json={
        'type': 'certificate',
        'meta': {'unavailable_attempts': 1, 'pad': 'x' * 70000}})
    # The size is checked before the type's schema (which would refuse
    # the unknown key).
    assert (huge.status_code, error_code(huge)) == (413, 'retry.too_large')


def test_a_body_over_the_limiter_is_a_json_413(rest_conf, application):
    http = conftest.Client(application())
    # Registered by the limiter the application was built with.
    rest_conf.set_override('max_request_body_size', 1024,
                           group='oslo_middleware')
    big = http.post('/v1/orders', headers=MEMBER,
                    json=dict(CREATE, meta={'pad': 'x' * 2000}))
    assert (big.status_code, error_code(big)) == (
        413, 'retry.request_too_large')


def test_list_pages_with_a_next_link_and_filters(http):
    made = [_create(http).get_json()['id'] for _ in range(3)]
    first = http.get('/v1/orders?limit=2', headers=MEMBER).get_json()
    assert [order['id'] for order in first['orders']] == made[:2]
    assert 'meta' not in first['orders'][0]
    second = http.get(first['next'], headers=MEMBER).get_json()
    assert [order['id'] for order in second['orders']] == made[2:]
    assert 'next' not in second
    none = http.get('/v1/orders?status=ACTIVE', headers=MEMBER).get_json()
    assert none == {'orders': []}
    typed = http.get('/v1/orders?type=certificate', headers=MEMBER)
    assert len(typed.get_json()['orders']) == 3


def test_bad_queries_are_400(http):
    for query, code in (('limit=many', 'retry.invalid_request'),
                        ('limit=0', 'retry.out_of_bounds'),
                        ('status=DONE', 'retry.invalid_request'),
                        ('colour=red', 'retry.invalid_request'),
                        ('limit=1&limit=2', 'retry.invalid_request'),
                        ('marker=nope', 'retry.invalid_request')):
        refused = http.get('/v1/orders?' + query, headers=MEMBER)
        assert (refused.status_code, error_code(refused)) == (400, code), \
            query


def test_cancel_records_who_asked(http):
    order = _create(http).get_json()
    cancelled = http.post('/v1/orders/%s/cancel' % order['id'],
                          headers=MEMBER)
    assert cancelled.status_code == 200
    body = cancelled.get_json()
    assert body['status'] == 'CANCELLED'
    assert 'user member-a' in body['error_reason']
    assert cancelled.headers['x-openstack-request-id'] in \
        body['error_reason']


def _requests(http, order_id):
    """The history's rows of cancels and resumes, who asked decoded."""
    history = http.get('/v1/orders/%s/history' % order_id,
                       headers=conftest.READER)
    assert history.status_code == 200
    return [dict(run, requested_by=json.loads(run['requested_by']))
            for run in history.get_json()['history']
            if run['result'] == 'requested']


def test_cancel_and_resume_record_who_asked_in_the_history(
        http, database):
    order = _create(http).get_json()
    cancelled = http.post('/v1/orders/%s/cancel' % order['id'],
                          headers=MEMBER)
    [cancel] = _requests(http, order['id'])
    assert (cancel['step'], cancel['attempt'], cancel['worker']) == (
        'order:cancel', 0, None)
    assert cancel['error'] == cancelled.get_json()['error_reason']
    assert cancel['requested_by'] == {
        'actor': 'user', 'user_id': 'member-a',
        'project_id': conftest.PROJECT_A, 'os_user': None,
        'request_id': cancelled.headers['x-openstack-request-id']}

    failed = _create(http).get_json()
    with database.session() as session, session.begin():
        assert database.repositories.orders.fail(
            session, failed['id'], timeutils.utcnow(), 'it broke')
    resumed = http.post('/v1/orders/%s/resume' % failed['id'],
                        headers=MEMBER)
    assert resumed.status_code == 200
    [resume] = _requests(http, failed['id'])
    assert (resume['step'], resume['error']) == ('order:resume', None)
    assert resume['requested_by'] == {
        'actor': 'user', 'user_id': 'member-a',
        'project_id': conftest.PROJECT_A, 'os_user': None,
        'request_id': resumed.headers['x-openstack-request-id']}


def test_resume_of_an_order_that_is_not_error_is_409(http):
    order = _create(http).get_json()
    refused = http.post('/v1/orders/%s/resume' % order['id'],
                        headers=MEMBER)
    assert (refused.status_code, error_code(refused)) == (
        409, 'retry.order_not_resumable')


def test_history_of_a_new_order_is_empty(http):
    order = _create(http).get_json()
    history = http.get('/v1/orders/%s/history' % order['id'],
                       headers=conftest.READER)
    assert history.status_code == 200
    assert history.get_json() == {'history': []}


def test_unknown_orders_and_routes_are_json_404s(http):
    for path, code in (('/v1/orders/%s' % uuid.uuid4(),
                        'retry.order_not_found'),
                       ('/v1/orders/%s/history' % uuid.uuid4(),
                        'retry.order_not_found'),
                       ('/v1/elsewhere', 'retry.not_found')):
        missing = http.get(path, headers=MEMBER)
        assert (missing.status_code, error_code(missing)) == (404, code)
    wrong = http.open('DELETE', '/v1/orders', headers=MEMBER)
    assert (wrong.status_code, error_code(wrong)) == (
        405, 'retry.method_not_allowed')


def test_too_many_pending_orders_is_429_with_retry_after(rest_conf, http):
    rest_conf.set_override('max_pending', 1, group='order_type:certificate')
    assert _create(http).status_code == 201
    refused = _create(http)
    assert (refused.status_code, error_code(refused)) == (
        429, 'retry.too_many_pending_orders')
    assert int(refused.headers['Retry-After']) > 0


def test_an_unreachable_database_is_503_with_retry_after(
        monkeypatch, orders, http):
    from oslo_db import exception as db_exception

    def down(*args, **kwargs):
        raise db_exception.DBConnectionError('connection refused')
    monkeypatch.setattr(orders, 'list', down)
    refused = http.get('/v1/orders', headers=MEMBER)
    assert (refused.status_code, error_code(refused)) == (
        503, 'retry.service_unavailable')
    assert int(refused.headers['Retry-After']) > 0
