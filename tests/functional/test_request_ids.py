"""An order's request ids on every log line about it, in every process.

Real worker and retry daemon processes, RabbitMQ: an order created by
``order create --global-request-id`` (through ``worker.api``, as an API
server would create it) is cast with its ids in the cast's context,
waits for its status check (a retry row the daemon casts) and becomes
ACTIVE. Each line of either log that names the order
carries its ids where oslo.log writes a request's.
"""

import pytest

from tests.functional import processes
from worker.db import models
from worker.db import orders

GLOBAL_REQUEST_ID = 'req-0b7e3f9a-5c1d-4e8f-a2b6-7d4c9e1f3a58'
OPTIONS = {
    'scheduler': {'schedule_period_seconds': 1},
    'worker': {'workers': 1},
    # The status check comes 2 s after the request: a retry row.
    'simple_certificate': {'delay_before_update_seconds': 2},
}


@pytest.mark.parametrize('backend', ['postgresql'])
def test_every_line_about_an_order_carries_its_request_ids(
        deployment, database, backend):
    cluster = deployment(OPTIONS)      # debug = true (processes.py)
    workers = cluster.start('barbican-worker', 'worker')
    retry = cluster.start('barbican-retry', 'retry')
    workers.wait_for_log('serving topic')
    retry.wait_for_log('Retry scheduler started')

    # As an API server would: through worker.api, here its operator
    # command, with the id of the request it comes from.
    [order] = cluster.manage_json('order', 'create', '--type',
                                  'certificate', '--global-request-id',
                                  GLOBAL_REQUEST_ID)
    order_id = order['id']
    shown = cluster.manage_json('order', 'show', order_id)
    assert shown['global_request_id'] == GLOBAL_REQUEST_ID
    request_id = shown['request_id']
    assert request_id.startswith('req-')
    processes.wait_for(lambda: _status(database, order_id) == models.ACTIVE,
                       60, 'the order ACTIVE')
    assert retry.stop() == 0
    assert workers.stop() == 0

    where = '[%s %s ' % (GLOBAL_REQUEST_ID, request_id)
    for daemon, expected in ((workers, 'Order %s' % order_id),
                             (retry, 'Cast step check_certificate_status '
                                     'of order %s' % order_id)):
        about = [line for line in daemon.log().splitlines()
                 if order_id in line]
        assert [line for line in about if where not in line] == [], (
            'lines of %s about the order without its request ids'
            % daemon.script)
        assert any(expected in line for line in about), (
            '%s logged no %r line' % (daemon.script, expected))


def _status(database, order_id):
    with database.session() as session:
        return orders.status_of(session, order_id)
