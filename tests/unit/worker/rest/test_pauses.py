"""``/v1/pauses``: the admin pauses any target, a project member its own
orders only (another project's is 404), and an order shows ``paused_by``
while paused."""

from tests.unit.worker.rest.conftest import ADMIN
from tests.unit.worker.rest.conftest import error_code
from tests.unit.worker.rest.conftest import MEMBER
from tests.unit.worker.rest.conftest import MEMBER_B
from tests.unit.worker.rest.conftest import READER


def _create(http, headers):
    created = http.post('/v1/orders', headers,
                        json={'type': 'certificate', 'meta': {}})
    assert created.status_code == 201
    return created.get_json()['id']


def test_the_admin_pauses_a_type_with_a_reason_and_unpauses_it(http):
    paused = http.open('PUT', '/v1/pauses/order_type/certificate', ADMIN,
                       json={'reason': 'CA maintenance'})
    assert paused.status_code == 200
    assert {key: paused.get_json()[key] for key in (
        'target', 'name', 'reason', 'project_id')} == {
        'target': 'order_type', 'name': 'certificate',
        'reason': 'CA maintenance', 'project_id': None}
    order_id = _create(http, MEMBER)
    shown = http.get('/v1/orders/' + order_id, READER).get_json()
    assert [(pause['target'], pause['name']) for pause in
            shown['paused_by']] == [('order_type', 'certificate')]
    assert [pause['name'] for pause in http.get(
        '/v1/pauses', ADMIN).get_json()['pauses']] == ['certificate']

    assert http.open('DELETE', '/v1/pauses/order_type/certificate',
                     ADMIN).status_code == 204
    assert http.get('/v1/pauses', ADMIN).get_json() == {'pauses': []}
    assert 'paused_by' not in http.get('/v1/orders/' + order_id,
                                       READER).get_json()


def test_a_member_pauses_its_own_order_and_not_another_projects(http):
    mine, theirs = _create(http, MEMBER), _create(http, MEMBER_B)

    paused = http.open('PUT', '/v1/pauses/order/' + mine, MEMBER)
    assert paused.status_code == 200
    assert paused.get_json()['name'] == mine
    for method in ('PUT', 'DELETE'):
        refused = http.open(method, '/v1/pauses/order/' + theirs, MEMBER)
        assert (refused.status_code, error_code(refused)) == (
            404, 'retry.order_not_found')
    assert http.open('DELETE', '/v1/pauses/order/' + mine,
                     MEMBER).status_code == 204


def test_only_the_admin_pauses_types_topics_keys_and_schedules(http):
    for path in ('/v1/pauses/order_type/certificate',
                 '/v1/pauses/topic/barbican_retry',
                 '/v1/pauses/resource/ca:x', '/v1/pauses/schedule/s'):
        for method in ('PUT', 'DELETE'):
            refused = http.open(method, path, MEMBER)
            assert (refused.status_code, error_code(refused)) == (
                403, 'retry.forbidden'), (method, path)
    refused = http.get('/v1/pauses', READER)
    assert refused.status_code == 403


def test_what_cannot_be_paused_is_a_400_or_a_404(http):
    assert http.open('PUT', '/v1/pauses/queue/x',
                     ADMIN).status_code == 400
    assert http.open('PUT', '/v1/pauses/order_type/nope',
                     ADMIN).status_code == 400
    missing = http.open('PUT', '/v1/pauses/schedule/no-such-schedule',
                        ADMIN)
    assert (missing.status_code, error_code(missing)) == (
        404, 'retry.schedule_not_found')
    extra = http.open('PUT', '/v1/pauses/resource/ca:x', ADMIN,
                      json={'reason': 'x', 'until': 'later'})
    assert extra.status_code == 400
