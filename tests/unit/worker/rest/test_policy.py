"""The personas: who may read, change, and see every project; another
project's order is not found; a policy file overrides a default."""

import pytest

from tests.unit.worker.rest import conftest
from tests.unit.worker.rest.conftest import error_code
from worker.rest import policies

READER = conftest.READER
MEMBER = conftest.MEMBER
MEMBER_B = conftest.MEMBER_B
ADMIN = conftest.ADMIN
CREATE = {'type': 'certificate', 'meta': {'unavailable_attempts': 1}}


@pytest.fixture
def order_a(http):
    return http.post('/v1/orders', headers=MEMBER, json=CREATE).get_json()


def test_a_reader_reads_but_cannot_change(http, order_a):
    assert http.get('/v1/orders/%s' % order_a['id'],
                    headers=READER).status_code == 200
    assert http.get('/v1/orders', headers=READER).status_code == 200
    assert http.get('/v1/order-types', headers=READER).status_code == 200
    for path in ('/v1/orders', '/v1/orders/%s/cancel' % order_a['id'],
                 '/v1/orders/%s/resume' % order_a['id']):
        refused = http.post(path, headers=READER, json=CREATE)
        assert (refused.status_code, error_code(refused)) == (
            403, 'retry.forbidden'), path


def test_another_projects_order_is_not_found_nor_listed(http, order_a):
    for method, path in (
            ('GET', '/v1/orders/%s' % order_a['id']),
            ('GET', '/v1/orders/%s/history' % order_a['id']),
            ('POST', '/v1/orders/%s/cancel' % order_a['id']),
            ('POST', '/v1/orders/%s/resume' % order_a['id'])):
        hidden = http.open(method, path, headers=MEMBER_B)
        assert (hidden.status_code, error_code(hidden)) == (
            404, 'retry.order_not_found'), path
    assert http.get('/v1/orders', headers=MEMBER_B).get_json() == {
        'orders': []}
    # Still PENDING: B's cancel changed nothing.
    assert http.get('/v1/orders/%s' % order_a['id'], headers=MEMBER
                    ).get_json()['status'] == 'PENDING'


def test_the_admin_sees_every_project_and_filters_by_one(http, order_a):
    http.post('/v1/orders', headers=MEMBER_B, json=CREATE)
    every = http.get('/v1/orders', headers=ADMIN).get_json()['orders']
    assert {order['project_id'] for order in every} == {
        conftest.PROJECT_A, conftest.PROJECT_B}
    only_a = http.get('/v1/orders?project_id=%s' % conftest.PROJECT_A,
                      headers=ADMIN).get_json()['orders']
    assert [order['id'] for order in only_a] == [order_a['id']]
    assert http.get('/v1/orders/%s' % order_a['id'],
                    headers=ADMIN).status_code == 200


def test_notification_urls_are_the_admins_only(http):
    for headers in (READER, MEMBER):
        refused = http.get('/v1/notification-urls', headers=headers)
        assert (refused.status_code, error_code(refused)) == (
            403, 'retry.forbidden')
    assert http.get('/v1/notification-urls', headers=ADMIN).get_json() == {
        'notification_urls': []}


def test_a_request_without_a_project_is_401(http):
    refused = http.get('/v1/orders', headers={'X-Roles': 'admin'})
    assert (refused.status_code, error_code(refused)) == (
        401, 'retry.unauthenticated')


def test_a_policy_file_overrides_a_default(tmp_path, rest_conf,
                                           application, order_a):
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text('"retry:order:list": "role:admin"\n'
                           '"retry:order:cancel": "rule:project_reader"\n')
    rest_conf.set_override('policy_file', str(policy_file),
                           group='oslo_policy')
    http = conftest.Client(application())
    refused = http.get('/v1/orders', headers=MEMBER)
    assert (refused.status_code, error_code(refused)) == (
        403, 'retry.forbidden')
    cancelled = http.post('/v1/orders/%s/cancel' % order_a['id'],
                          headers=READER)
    assert cancelled.status_code == 200


def test_every_rule_names_its_route_and_is_in_the_sample():
    with open('etc/barbican-retry/policy.yaml.sample') as sample:
        text = sample.read()
    for rule in policies.list_rules():
        assert '"%s":' % rule.name in text, rule.name
