"""A deployment of the REST API for the functional tests: the real
``barbican-retry-api`` (gunicorn, 2 workers) on 127.0.0.1 beside a real
worker and retry daemon over RabbitMQ, on one database; and ``Api``, its
client, which checks every response against doc/api-ref/openapi.yaml.

The noauth tests (test_rest_api.py), the Keystone tests
(test_rest_keystone.py) and the ``openstack`` client's
(test_openstack_client.py) start it with the ``[api]`` and
``[keystone_authtoken]`` options of their own.
"""

import os

from cryptography import fernet
import pytest
import requests

from tests.functional import databases
from tests.functional import processes
from tests import rest_spec
from worker.db import migration
from worker.db import session as db_session

#: The host whose notification URLs the deployment accepts.
ALLOWED_HOST = 'hooks.example.org'
#: A create's body: one retry, then ACTIVE.
CREATE = {'type': 'certificate', 'meta': {'unavailable_attempts': 1}}


class Api:
    """The API's base URL and a keep-alive session; every response it
    returns was checked against the OpenAPI description."""

    def __init__(self, base_url, daemon, deployment, backend, worker):
        self.base_url = base_url
        self.daemon = daemon
        self.deployment = deployment
        self.backend = backend
        self.worker = worker
        self._session = requests.Session()

    def close(self):
        """Close the keep-alive connection (a stop waits for it)."""
        self._session.close()

    def call(self, method, path, headers=None, **kwargs):
        """The checked response of one request."""
        response = self._session.request(
            method, self.base_url + path, headers=headers, timeout=30,
            **kwargs)
        return rest_spec.check_requests(response)

    def get(self, path, headers=None, **kwargs):
        """GET ``path``."""
        return self.call('GET', path, headers, **kwargs)

    def post(self, path, headers=None, **kwargs):
        """POST ``path``."""
        return self.call('POST', path, headers, **kwargs)

    def create(self, headers, **body):
        """Create an order as the caller of ``headers``; returns it."""
        created = self.post('/v1/orders', headers, json=dict(CREATE, **body))
        assert created.status_code == 201, created.text
        return created.json()

    def wait_for_status(self, order_id, status, headers, timeout=60):
        """The order once it has ``status`` (read with ``headers``)."""
        def reached():
            order = self.get('/v1/orders/%s' % order_id, headers).json()
            return order if order['status'] == status else None
        return processes.wait_for(reached, timeout,
                                  'order %s %s' % (order_id, status))


def require_servers(backend):
    """Skip (or fail, under bin/run-tests.sh) without the database server
    of ``backend`` or RabbitMQ."""
    required = os.environ.get('BARBICAN_RETRY_TEST_REQUIRE_SERVICES') == '1'
    if backend != 'sqlite' and not databases.server_url(backend):
        if required:
            pytest.fail('%s server is not available' % backend)
        pytest.skip('no %s server (run the suite with bin/run-tests.sh)'
                    % backend)
    if not os.environ.get('BARBICAN_RETRY_TEST_TRANSPORT_URL'):
        if required:
            pytest.fail('RabbitMQ is not available')
        pytest.skip('no RabbitMQ (run the suite with bin/run-tests.sh)')


def deploy(backend, directory, api_options, extra=None):
    """Start a worker, a retry daemon and the API on a new database of
    ``backend``; yields the ``Api``, and at the end kills them and drops
    the database.

    :param api_options: the ``[api]`` options beyond the bind address.
    :param extra: more ``{group: {name: value}}`` for the config file.
    """
    require_servers(backend)
    database_url = databases.create(backend, directory)
    database = db_session.Database.from_url(database_url)
    migration.upgrade(database.engine)
    database.dispose()
    key_file = directory / 'url-keys'
    key_file.write_text(fernet.Fernet.generate_key().decode() + '\n')
    port = processes.free_port()
    options = {
        'scheduler': {'schedule_period_seconds': 1},
        'worker': {'workers': 1},
        'simple_certificate': {'delay_before_update_seconds': 1},
        'notifications': {'allowed_hosts': ALLOWED_HOST, 'secret': 's',
                          'secret_key_file': key_file},
        'api': dict({'bind_host': '127.0.0.1', 'bind_port': port,
                     'workers': 2,
                     'audit_map_file': os.path.join(
                         processes.REPO_ROOT, 'etc', 'barbican-retry',
                         'api_audit_map.conf')}, **api_options),
        'oslo_middleware': {'max_request_body_size': 262144},
    }
    options.update(extra or {})
    deployment = processes.Deployment(
        directory, database_url,
        os.environ['BARBICAN_RETRY_TEST_TRANSPORT_URL'], options)
    try:
        worker = deployment.start('barbican-worker', 'worker')
        worker.wait_for_log('serving topic')
        deployment.start('barbican-retry', 'retry').wait_for_log(
            'Retry scheduler started')
        daemon = deployment.start('barbican-retry-api', 'api')
        base_url = 'http://127.0.0.1:%d' % port
        processes.wait_for(lambda: processes.api_healthy(base_url, daemon), 60,
                           'barbican-retry-api answering')
        api = Api(base_url, daemon, deployment, backend, worker)
        yield api
        api.close()
    finally:
        deployment.kill_all()
        databases.drop(backend, database_url)


def code(response):
    """The ``code`` of a JSON error response (its one error), after
    checking that its status and request id are the response's."""
    [error] = response.json()['errors']
    assert error['status'] == response.status_code
    assert error['request_id'] == response.headers['x-openstack-request-id']
    return error['code']
