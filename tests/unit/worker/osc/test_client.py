"""The ``openstack retry`` plugin's client against a mocked API."""

import argparse

from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from osc_lib import exceptions
import pytest
import requests_mock

from worker.osc import client as retry_client
from worker.osc import orders
from worker.osc import plugin

API = 'http://127.0.0.1:9312'


@pytest.fixture
def api():
    with requests_mock.Mocker() as mocker:
        yield mocker


@pytest.fixture
def retry():
    return retry_client.Client(ks_session.Session(), API)


def test_create_sends_the_key_and_the_microversion(api, retry):
    api.post(API + '/v1/orders', status_code=201,
             json={'id': 'o1', 'status': 'PENDING'})

    order = retry.create_order({'type': 'certificate', 'meta': {}}, 'k-1')

    assert order['id'] == 'o1'
    sent = api.request_history[0]
    assert sent.json() == {'type': 'certificate', 'meta': {}}
    assert sent.headers['Idempotency-Key'] == 'k-1'
    assert sent.headers['OpenStack-API-Version'] == 'retry 1.0'


def test_no_key_sends_no_header(api, retry):
    api.post(API + '/v1/orders', status_code=201, json={'id': 'o1'})

    retry.create_order({'type': 'certificate', 'meta': {}})

    assert 'Idempotency-Key' not in api.request_history[0].headers


def test_list_without_limit_follows_every_next_link(api, retry):
    api.get(API + '/v1/orders?status=ERROR',
            json={'orders': [{'id': 'a'}],
                  'next': API + '/v1/orders?status=ERROR&marker=a'})
    api.get(API + '/v1/orders?status=ERROR&marker=a',
            json={'orders': [{'id': 'b'}]})

    found = retry.list_orders({'status': 'ERROR'})

    assert [order['id'] for order in found] == ['a', 'b']


def test_list_with_limit_reads_one_page(api, retry):
    api.get(API + '/v1/orders',
            json={'orders': [{'id': 'a'}],
                  'next': API + '/v1/orders?marker=a&limit=1'})

    found = retry.list_orders({}, limit=1, marker='z')

    assert [order['id'] for order in found] == ['a']
    assert len(api.request_history) == 1
    assert api.request_history[0].qs == {'limit': ['1'], 'marker': ['z']}


def test_an_id_cannot_leave_its_path_segment(api, retry):
    api.get(API + '/v1/orders/..%2Fschedules', json={'id': '../schedules'})

    retry.get_order('../schedules')

    assert api.request_history[0].path == '/v1/orders/..%2fschedules'


def test_an_api_error_names_its_code_and_detail(api, retry):
    api.get(API + '/v1/orders/gone', status_code=404, json={'errors': [{
        'status': 404, 'code': 'retry.order_not_found',
        'title': 'Not Found', 'detail': 'No order gone.'}]})

    with pytest.raises(exceptions.CommandError) as raised:
        retry.get_order('gone')

    assert str(raised.value) == (
        'retry.order_not_found (HTTP 404): No order gone.')


def test_an_error_that_is_not_json_still_says_its_status(api, retry):
    api.get(API + '/v1/order-types', status_code=502, text='Bad Gateway')

    with pytest.raises(exceptions.CommandError) as raised:
        retry.order_types()

    assert str(raised.value) == 'HTTP 502: Bad Gateway'


@pytest.mark.parametrize('text', ['[1, 2]', 'not json', '"text"'])
def test_meta_must_be_a_json_object(text):
    parser = orders.CreateOrder(None, argparse.Namespace()).get_parser('x')

    with pytest.raises(SystemExit):
        parser.parse_args(['--type', 'certificate', '--meta', text])


def test_create_command_sends_only_what_was_given():
    sent = {}

    class Retry:
        def create_order(self, body, key):
            sent.update(body=body, key=key)
            return {'id': 'o1', 'steps': [{'name': 's', 'status': 'QUEUED'}]}

    app = argparse.Namespace(client_manager=argparse.Namespace(retry=Retry()))
    command = orders.CreateOrder(app, argparse.Namespace())
    parsed = command.get_parser('x').parse_args(
        ['--type', 'certificate', '--meta', '{"cn": "a"}',
         '--callback-url', 'https://a.example/', '--priority', '3'])

    columns, row = command.take_action(parsed)

    assert sent == {'body': {'type': 'certificate', 'meta': {'cn': 'a'},
                             'priority': 3,
                             'callback_urls': ['https://a.example/']},
                    'key': None}
    assert dict(zip(columns, row))['id'] == 'o1'


def test_the_plugin_declares_the_osc_interface():
    assert plugin.API_NAME == 'retry'
    assert plugin.API_VERSIONS['1'] == 'worker.osc.client.Client'
    parsed = plugin.build_option_parser(argparse.ArgumentParser()).parse_args(
        [])
    assert getattr(parsed, plugin.API_VERSION_OPTION) == '1'


def test_a_next_link_is_followed_on_the_endpoint_only(api):
    # The token goes to the endpoint the catalog names and nowhere else,
    # and a path the API built behind a proxy's prefix (X-Forwarded-
    # Prefix: /retry) is not prefixed twice: only the link's query counts.
    endpoint = 'http://proxy.example.org/retry'
    token = 'a-token'
    api.get(endpoint + '/v1/orders', json={
        'orders': [{'id': 'a'}],
        'next': 'http://elsewhere.example.com/retry/v1/orders?marker=a'})
    api.get(endpoint + '/v1/orders?marker=a', json={'orders': [{'id': 'b'}]})
    retry = retry_client.Client(ks_session.Session(
        auth=token_endpoint.Token(endpoint, token)), endpoint)

    found = retry.list_orders({})

    assert [order['id'] for order in found] == ['a', 'b']
    assert [(sent.hostname, sent.path, sent.headers['X-Auth-Token'])
            for sent in api.request_history] == [
        ('proxy.example.org', '/retry/v1/orders', token)] * 2
    assert api.request_history[1].qs == {'marker': ['a']}
