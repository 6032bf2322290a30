"""``OpenStack-API-Version: retry X.Y`` negotiation and the version
document."""

import pytest

from tests.unit.worker.rest import conftest
from tests.unit.worker.rest.conftest import error_code
from worker.rest import errors
from worker.rest import microversions


@pytest.mark.parametrize('header, version', [
    (None, (1, 0)), ('retry 1.0', (1, 0)), ('retry latest', (1, 0)),
    ('compute 2.1, retry 1.0', (1, 0)), ('compute 2.1', (1, 0))])
def test_supported_versions(header, version):
    headers = {} if header is None else {'OpenStack-API-Version': header}
    assert microversions.negotiate(headers) == version


@pytest.mark.parametrize('header', ['retry 1.1', 'retry 2.0', 'retry 0.9',
                                    'retry one', 'retry 1.0.0'])
def test_unsupported_versions_are_406(header):
    with pytest.raises(errors.APIError) as raised:
        microversions.negotiate({'OpenStack-API-Version': header})
    assert (raised.value.status, raised.value.code) == (
        406, 'retry.unsupported_version')


def test_v1_responses_say_their_version_and_vary_on_it(http):
    answered = http.get('/v1/order-types', headers=dict(
        conftest.READER, **{'OpenStack-API-Version': 'retry 1.0'}))
    assert answered.headers['OpenStack-API-Version'] == 'retry 1.0'
    assert answered.headers['Vary'] == 'OpenStack-API-Version'
    refused = http.get('/v1/order-types', headers=dict(
        conftest.READER, **{'OpenStack-API-Version': 'retry 9.9'}))
    assert (refused.status_code, error_code(refused)) == (
        406, 'retry.unsupported_version')
    assert refused.headers['OpenStack-API-Version'] == 'retry 1.0'


def test_the_version_document_and_healthcheck_need_no_identity(http):
    document = http.get('/')
    assert document.status_code == 200
    [version] = document.get_json()['versions']
    assert (version['id'], version['min_version'],
            version['max_version']) == ('v1.0', '1.0', '1.0')
    assert document.headers['x-openstack-request-id'].startswith('req-')
    assert http.get('/healthcheck').status_code == 200
