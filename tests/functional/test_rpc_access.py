"""Workers serve only their declared endpoints, over a real RabbitMQ."""

from oslo_config import cfg
import oslo_messaging as messaging
import pytest

from tests.functional import processes
from worker import rpc

# The access policy is the broker side's; one database is enough.
pytestmark = pytest.mark.parametrize('backend', ['sqlite'])

FAST = {
    'DEFAULT': {'service_down_time': 3, 'report_interval': 1},
    'scheduler': {'schedule_period_seconds': 1},
    'worker': {'workers': 1},
    'simple_certificate': {'delay_before_update_seconds': 1},
}


def _cast(transport_url, topic, method, **kwargs):
    # NOTE: oslo.messaging registers some options on the global CONF only.
    transport = rpc.get_transport(cfg.CONF, url=transport_url)
    try:
        client = messaging.get_rpc_client(
            transport, messaging.Target(topic=topic, version='1.0'))
        client.cast({}, method, **kwargs)
    finally:
        transport.cleanup()


def test_a_public_method_that_is_not_an_endpoint_is_refused_and_logged(
        deployment, database, transport_url):
    cluster = deployment(FAST)
    workers = cluster.start('barbican-worker', 'worker')
    workers.wait_for_log('serving topic')

    # Public on the endpoint object, but not declared with @expose: under
    # the default policy the first would shut the step pool down (were it
    # to take a context), the second run steps unfenced.
    _cast(transport_url, cluster.topic, 'cancel_queued_steps')
    _cast(transport_url, cluster.topic, '_fence', steps=[])
    # Each refusal is one logged NoSuchMethod naming the method.
    workers.wait_for_log('does not support RPC method cancel_queued_steps',
                         timeout=30)
    workers.wait_for_log('does not support RPC method _fence', timeout=30)

    # The worker goes on serving its endpoints, run_steps among them.
    cluster.start('barbican-retry', 'retry')
    cluster.manage_json('order', 'create', '--type', 'certificate',
                        '--count', '3')
    processes.wait_for(lambda: processes.all_active(database, 3), 60,
                       'every order ACTIVE')
