"""``/v1/project-quotas`` and the 429 of a project over its quota."""

from tests.unit.worker.rest.conftest import ADMIN
from tests.unit.worker.rest.conftest import error_code
from tests.unit.worker.rest.conftest import MEMBER
from tests.unit.worker.rest.conftest import MEMBER_B
from tests.unit.worker.rest.conftest import PROJECT_A
from tests.unit.worker.rest.conftest import PROJECT_B
from tests.unit.worker.rest.conftest import READER

QUOTA_A = '/v1/project-quotas/' + PROJECT_A


def _create(http, headers):
    return http.post('/v1/orders', headers,
                     json={'type': 'certificate', 'meta': {}})


def test_an_override_bounds_the_project_with_429_and_can_be_dropped(http):
    assert http.get(QUOTA_A, READER).get_json() == {
        'project_id': PROJECT_A, 'pending_orders': -1, 'override': None,
        'default': -1}
    set_to_one = http.open('PUT', QUOTA_A, ADMIN,
                           json={'pending_orders': 1})
    assert set_to_one.get_json()['pending_orders'] == 1

    assert _create(http, MEMBER).status_code == 201
    refused = _create(http, MEMBER)
    assert refused.status_code == 429
    assert error_code(refused) == 'retry.project_quota_exceeded'
    assert refused.headers['Retry-After']
    [error] = refused.get_json()['errors']
    assert error['source'] == {'project_id': PROJECT_A, 'quota': 1,
                               'pending': 1}
    # Another project is not bounded by A's override.
    assert _create(http, MEMBER_B).status_code == 201
    assert [quota['project_id'] for quota in http.get(
        '/v1/project-quotas', ADMIN).get_json()['project_quotas']] == [
        PROJECT_A]

    assert http.open('DELETE', QUOTA_A, ADMIN).status_code == 204
    assert _create(http, MEMBER).status_code == 201


def test_only_the_admin_overrides_and_a_project_reads_only_its_own(http):
    for method, path, body in (
            ('PUT', QUOTA_A, {'pending_orders': 100}),
            ('DELETE', QUOTA_A, None),
            ('GET', '/v1/project-quotas', None)):
        refused = http.open(method, path, MEMBER, json=body)
        assert (refused.status_code, error_code(refused)) == (
            403, 'retry.forbidden')
    other = http.get('/v1/project-quotas/' + PROJECT_B, MEMBER)
    assert other.status_code == 403
    assert http.get('/v1/project-quotas/' + PROJECT_B,
                    ADMIN).status_code == 200


def test_an_override_out_of_bounds_is_a_400(http):
    for value in (-2, 2 ** 31, 'ten', None, 1.5):
        refused = http.open('PUT', QUOTA_A, ADMIN,
                            json={'pending_orders': value})
        assert refused.status_code == 400, value
    extra = http.open('PUT', QUOTA_A, ADMIN,
                      json={'pending_orders': 1, 'project_id': 'x'})
    assert extra.status_code == 400
