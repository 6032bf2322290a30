"""``POST /v1/orders/{id}/signals``: 202 for a new signal, 200 for a
repeated ``signal_id``, 404 for another project's order, 403 for a
reader, 409 once the order ended, 400 for a name its type does not wait
for."""

from tests.unit.worker.rest.conftest import error_code
from tests.unit.worker.rest.conftest import MEMBER
from tests.unit.worker.rest.conftest import MEMBER_B
from tests.unit.worker.rest.conftest import READER

ISSUED = 'certificate.issued'


def _order(http):
    created = http.post('/v1/orders', MEMBER,
                        json={'type': 'certificate', 'meta': {}})
    assert created.status_code == 201
    return created.get_json()['id']


def _signal(http, order_id, headers=MEMBER, **body):
    return http.post('/v1/orders/%s/signals' % order_id, headers,
                     json=dict({'name': ISSUED}, **body))


def test_a_signal_is_accepted_once_and_repeated_by_its_id(http):
    order_id = _order(http)

    first = _signal(http, order_id, payload={'serial': 7}, signal_id='s1')
    again = _signal(http, order_id, payload={'other': 1}, signal_id='s1')

    assert first.status_code == 202
    shown = first.get_json()
    assert (shown['order_id'], shown['signal_id'], shown['name'],
            shown['payload'], shown['repeated']) == (
                order_id, 's1', ISSUED, '{"serial": 7}', False)
    assert again.status_code == 200
    assert (again.get_json()['payload'], again.get_json()['repeated']) == (
        '{"serial": 7}', True)


def test_another_projects_order_is_not_found_and_a_reader_may_not(http):
    order_id = _order(http)
    other = _signal(http, order_id, MEMBER_B)
    assert (other.status_code, error_code(other)) == (
        404, 'retry.order_not_found')
    reader = _signal(http, order_id, READER)
    assert (reader.status_code, error_code(reader)) == (
        403, 'retry.forbidden')


def test_an_ended_order_is_409_and_an_unknown_name_400(http):
    order_id = _order(http)
    unknown = _signal(http, order_id, name='certificate.revoked')
    assert unknown.status_code == 400
    assert http.post('/v1/orders/%s/cancel' % order_id,
                     MEMBER).status_code == 200
    ended = _signal(http, order_id)
    assert (ended.status_code, error_code(ended)) == (
        409, 'retry.order_not_signallable')
