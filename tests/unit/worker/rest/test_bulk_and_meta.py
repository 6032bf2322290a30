"""``GET /v1/orders?meta.<path>=value`` and ``POST
/v1/orders/bulk-actions`` over the real ``worker.api`` on SQLite: a member
never matches, nor changes, another project's orders."""

import urllib.parse

from tests.unit.worker.rest import conftest
from tests.unit.worker.rest.conftest import error_code

MEMBER, MEMBER_B, ADMIN, READER = (conftest.MEMBER, conftest.MEMBER_B,
                                   conftest.ADMIN, conftest.READER)


def _create(http, meta, headers=MEMBER):
    created = http.post('/v1/orders', headers=headers,
                        json={'type': 'certificate', 'meta': meta})
    assert created.status_code == 201
    return created.get_json()['id']


def _listed(http, headers=MEMBER, **query):
    found = http.get('/v1/orders?' + urllib.parse.urlencode(query),
                     headers=headers)
    assert found.status_code == 200, found.get_json()
    return [order['id'] for order in found.get_json()['orders']]


def test_list_by_meta_paths_is_typed_and_pages_with_its_filters(http):
    number = _create(http, {'ca': 'acme', 'issuer': {'n': 3}})
    text = _create(http, {'ca': 'acme', 'issuer': {'n': '3'}})
    other = _create(http, {'ca': 'other'})
    assert _listed(http, **{'meta.ca': 'acme'}) == [number, text]
    assert _listed(http, **{'meta.issuer.n': '3'}) == [number]
    assert _listed(http, **{'meta.issuer.n': '"3"'}) == [text]
    assert _listed(http, **{'meta.ca': 'other', 'status': 'PENDING'}) == [
        other]
    first = http.get('/v1/orders?limit=1&meta.ca=acme',
                     headers=MEMBER).get_json()
    assert [order['id'] for order in first['orders']] == [number]
    assert 'meta.ca=acme' in first['next']
    second = http.get(first['next'], headers=MEMBER).get_json()
    assert [order['id'] for order in second['orders']] == [text]


def test_a_member_never_matches_another_projects_orders_by_meta(http):
    mine = _create(http, {'ca': 'acme'})
    theirs = _create(http, {'ca': 'acme'}, headers=MEMBER_B)
    assert _listed(http, **{'meta.ca': 'acme'}) == [mine]
    assert _listed(http, headers=MEMBER_B, **{'meta.ca': 'acme'}) == [
        theirs]
    assert _listed(http, headers=ADMIN, **{'meta.ca': 'acme'}) == [
        mine, theirs]
    refused = http.get('/v1/orders?meta.ca=acme&project_id=%s'
                       % conftest.PROJECT_B, headers=MEMBER)
    assert refused.status_code == 403


def test_bad_meta_filters_are_400(http):
    for query, code in (
            ('meta.a%20b=1', 'retry.invalid_request'),
            ('meta.=1', 'retry.invalid_request'),
            ('meta.ca=[1]', 'retry.invalid_request'),
            ('meta.' + '.'.join('a' * 9) + '=1', 'retry.out_of_bounds'),
            ('&'.join('meta.k%d=1' % n for n in range(9)),
             'retry.out_of_bounds'),
            ('meta.ca=' + 'x' * 300, 'retry.out_of_bounds'),
            ('metaca=1', 'retry.invalid_request')):
        refused = http.get('/v1/orders?' + query, headers=MEMBER)
        assert (refused.status_code, error_code(refused)) == (400, code), \
            query


def _bulk(http, headers=MEMBER, **body):
    return http.post('/v1/orders/bulk-actions', headers=headers, json=body)


def _status(http, order_id, headers=MEMBER):
    return http.get('/v1/orders/%s' % order_id,
                    headers=headers).get_json()['status']


def test_a_members_bulk_cancel_changes_its_own_projects_orders_only(http):
    mine = [_create(http, {'ca': 'acme'}) for _ in range(2)]
    theirs = _create(http, {'ca': 'acme'}, headers=MEMBER_B)
    dry = _bulk(http, action='cancel', filters={'meta': {'ca': 'acme'}},
                dry_run=True)
    assert dry.status_code == 200
    assert dry.get_json() == {'action': 'cancel', 'dry_run': True,
                              'matched': 2, 'changed': 2, 'limit': 1000,
                              'failed': {}}
    done = _bulk(http, action='cancel', filters={'meta': {'ca': 'acme'}})
    assert (done.get_json()['matched'], done.get_json()['changed']) == (2, 2)
    assert [_status(http, order_id) for order_id in mine] == [
        'CANCELLED', 'CANCELLED']
    assert _status(http, theirs, MEMBER_B) == 'PENDING'
    refused = _bulk(http, action='cancel',
                    filters={'project_id': conftest.PROJECT_B})
    assert refused.status_code == 403
    assert _status(http, theirs, MEMBER_B) == 'PENDING'


def test_an_admin_bulk_reaches_every_project_or_the_one_named(http):
    mine = _create(http, {'ca': 'acme'})
    theirs = _create(http, {'ca': 'acme'}, headers=MEMBER_B)
    done = _bulk(http, ADMIN, action='reprioritize', priority=5,
                 filters={'project_id': conftest.PROJECT_B})
    assert done.get_json()['changed'] == 1
    assert http.get('/v1/orders/%s' % theirs,
                    headers=MEMBER_B).get_json()['priority'] == 5
    assert http.get('/v1/orders/%s' % mine,
                    headers=MEMBER).get_json()['priority'] == 0
    done = _bulk(http, ADMIN, action='cancel',
                 filters={'meta': {'ca': 'acme'}})
    assert done.get_json()['changed'] == 2


def test_bulk_refusals(http):
    for headers, body, status, code in (
            (READER, {'action': 'cancel'}, 403, 'retry.forbidden'),
            (MEMBER, {'action': 'pause', 'reason': 'x' * 256}, 400,
             'retry.out_of_bounds'),
            (MEMBER, {'action': 'cancel', 'limit': 1001}, 400,
             'retry.out_of_bounds'),
            (MEMBER, {'action': 'cancel', 'filters': {'colour': 'red'}},
             400, 'retry.invalid_request'),
            (MEMBER, {'action': 'cancel', 'filters': {'since': 'soon'}},
             400, 'retry.invalid_request'),
            (MEMBER, {'action': 'resume', 'filters': {'status': 'PENDING'}},
             400, 'retry.invalid_request'),
            (MEMBER, {'action': 'cancel', 'colour': 'red'}, 400,
             'retry.invalid_request')):
        refused = _bulk(http, headers, **body)
        assert (refused.status_code, error_code(refused)) == (
            status, code), body


def test_a_members_bulk_pause_pauses_its_own_projects_orders_only(http):
    mine = _create(http, {'ca': 'acme'})
    theirs = _create(http, {'ca': 'acme'}, headers=MEMBER_B)
    done = _bulk(http, action='pause', filters={'meta': {'ca': 'acme'}})
    assert (done.get_json()['matched'], done.get_json()['changed']) == (1, 1)
    shown = http.get('/v1/orders/%s' % mine, headers=MEMBER).get_json()
    assert [(pause['target'], pause['name'], pause['reason'][:14])
            for pause in shown['paused_by']] == [
                ('order', mine, 'paused in bulk')]
    assert 'paused_by' not in http.get('/v1/orders/%s' % theirs,
                                       headers=MEMBER_B).get_json()
    again = _bulk(http, action='pause', filters={'meta': {'ca': 'acme'}})
    assert (again.get_json()['matched'], again.get_json()['changed']) == (
        1, 0)
