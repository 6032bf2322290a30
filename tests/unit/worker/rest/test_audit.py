"""keystonemiddleware's audit middleware records the state-changing
requests as CADF events, and only those."""

from keystonemiddleware import audit
from oslo_messaging.notify import _impl_test

from tests.unit.worker.rest import conftest

CREATE = {'type': 'certificate', 'meta': {'unavailable_attempts': 1}}


def test_a_create_is_audited_and_a_read_is_not(rest_conf, application):
    rest_conf.set_override('audit', True, group='api')
    rest_conf.set_override('audit_map_file',
                           'etc/barbican-retry/api_audit_map.conf',
                           group='api')
    for group, opts in audit.list_opts():
        rest_conf.register_opts(opts, group=group)
    rest_conf.set_override('driver', 'test',
                           group=audit.AUDIT_MIDDLEWARE_GROUP)
    rest_conf.set_override('transport_url', 'fake://',
                           group=audit.AUDIT_MIDDLEWARE_GROUP)
    http = conftest.Client(application())
    _impl_test.reset()
    http.get('/v1/orders', headers=conftest.MEMBER)
    assert _impl_test.NOTIFICATIONS == []
    created = http.post('/v1/orders', headers=conftest.MEMBER, json=CREATE)
    assert created.status_code == 201
    events = {message['event_type']: message['payload']
              for _, message, _, _ in _impl_test.NOTIFICATIONS}
    assert set(events) == {'audit.http.request', 'audit.http.response'}
    response = events['audit.http.response']
    assert response['eventType'] == 'activity'
    assert response['action'] == 'create'
    assert response['outcome'] == 'success'
    assert response['initiator']['project_id'] == conftest.PROJECT_A
    assert response['reason']['reasonCode'] == '201'
