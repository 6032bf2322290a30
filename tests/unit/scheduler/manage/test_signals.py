"""``barbican-retry-manage order signal`` on a real SQLite database."""

import json

import pytest

from tests import config
from worker import api


@pytest.fixture
def conf():
    return config.make_conf()


def _json(completed):
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def _order(operator, conf):
    orders = api.OrderAPI(operator.database, conf)
    return orders.create('certificate', {}, project_id='p1')


def test_a_signal_is_sent_once_per_signal_id(operator, conf):
    order = _order(operator, conf)
    argv = ('order', 'signal', order.id[:8], 'certificate.issued',
            '--payload', '{"serial": 7}', '--signal-id', 's1', '-f', 'json')

    first = _json(operator.manage(*argv))
    again = _json(operator.manage(*argv))

    assert (first['order_id'], first['signal_id'], first['name'],
            first['payload'], first['repeated']) == (
                order.id, 's1', 'certificate.issued', '{"serial": 7}', False)
    assert again['repeated'] is True
    assert again['created_at'] == first['created_at']


def test_a_signal_to_an_order_that_ended_is_refused_in_one_line(
        operator, conf):
    order = _order(operator, conf)
    api.OrderAPI(operator.database, conf).cancel(order.id, project_id='p1')

    refused = operator.manage('order', 'signal', order.id,
                              'certificate.issued')

    assert refused.returncode != 0
    assert 'is CANCELLED: only a PENDING order takes signals' in \
        refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


def test_a_name_the_type_does_not_wait_for_is_refused(operator, conf):
    order = _order(operator, conf)
    refused = operator.manage('order', 'signal', order.id, 'nope')
    assert refused.returncode != 0
    assert 'waits for no signal nope' in refused.stderr
