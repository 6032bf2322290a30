"""The worker and the retry daemon over TLS to RabbitMQ.

The test broker has a listener that speaks TLS only, with a certificate
signed by a CA that ``services.sh`` makes for the run
(``BARBICAN_RETRY_TEST_TLS_*``). Orders go through with oslo.messaging's
``[oslo_messaging_rabbit] ssl`` options; a CA that did not sign the
broker's certificate is refused, so the certificate is verified.
"""

import os
import subprocess

import pytest

from tests.functional import processes

OPTIONS = {
    'DEFAULT': {'service_down_time': 6, 'report_interval': 2},
    'scheduler': {'schedule_period_seconds': 1},
    'worker': {'workers': 1},
    'simple_certificate': {'delay_before_update_seconds': 1},
}


@pytest.fixture
def tls_broker():
    """``(transport_url, ca_file)`` of the broker's TLS-only listener."""
    url = os.environ.get('BARBICAN_RETRY_TEST_TLS_TRANSPORT_URL')
    if not url:
        if os.environ.get('BARBICAN_RETRY_TEST_REQUIRE_SERVICES') == '1':
            pytest.fail('the test broker has no TLS listener')
        pytest.skip('no TLS listener (run the suite with bin/run-tests.sh)')
    return url, os.environ['BARBICAN_RETRY_TEST_TLS_CA_FILE']


def _deployment(tmp_path, database_url, transport_url, ca_file):
    return processes.Deployment(tmp_path, database_url, transport_url, dict(
        OPTIONS, oslo_messaging_rabbit={'ssl': 'true',
                                        'ssl_ca_file': ca_file}))


@pytest.mark.parametrize('backend', ['postgresql'])
def test_orders_go_through_over_tls(tmp_path, database, database_url,
                                    tls_broker):
    url, ca_file = tls_broker
    cluster = _deployment(tmp_path, database_url, url, ca_file)
    try:
        workers = cluster.start('barbican-worker', 'worker')
        retry = cluster.start('barbican-retry', 'retry')
        workers.wait_for_log('serving topic')
        cluster.manage_json('order', 'create', '--type', 'certificate',
                            '--count', '20')
        processes.wait_for(lambda: processes.all_active(database, 20), 60,
                           '20 orders ACTIVE over TLS')
        assert workers.stop() == 0 and retry.stop() == 0
    finally:
        cluster.kill_all()


@pytest.mark.parametrize('backend', ['sqlite'])
def test_a_broker_certificate_of_another_ca_is_refused(
        tmp_path, database, database_url, tls_broker):
    url, _ = tls_broker
    other = tmp_path / 'other-ca'
    other.mkdir()
    subprocess.run(
        ['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes',
         '-days', '1', '-subj', '/CN=another CA', '-keyout',
         str(other / 'ca.key'), '-out', str(other / 'ca.pem')],
        check=True, capture_output=True, timeout=60)
    cluster = _deployment(tmp_path, database_url, url, str(other / 'ca.pem'))
    try:
        workers = cluster.start('barbican-worker', 'worker')
        workers.wait_for_log('CERTIFICATE_VERIFY_FAILED', timeout=60)
    finally:
        cluster.kill_all()
