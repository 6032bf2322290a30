"""The console (``/console``) over the real ``worker.api`` on SQLite:
its pages, its server-side logins and CSRF tokens, and the REST API's
policy deciding what each persona sees and may do."""

import datetime
import re

import pytest
from werkzeug import test as werkzeug_test

from tests.unit.worker.rest import conftest
from worker.api import logins
from worker.rest import app as rest_app
from worker.rest.console import auth
from worker import schedule_api

CREATE = {'type': 'certificate', 'meta': {'unavailable_attempts': 1}}
CSRF = re.compile(r'name="csrf_token" value="([0-9a-f]+)"')


@pytest.fixture
def local(application):
    """A browser of the noauth console (its cookies kept)."""
    return werkzeug_test.Client(application())


def _order(orders, project=conftest.PROJECT_A):
    return orders.create('certificate', {'unavailable_attempts': 1},
                         project_id=project)


def _csrf(page):
    return CSRF.search(page.get_data(as_text=True)).group(1)


def test_noauth_logs_a_local_visitor_in_and_shows_every_project(
        local, orders):
    mine, theirs = _order(orders), _order(orders, conftest.PROJECT_B)
    first = local.get('/console/orders')
    assert first.status_code == 302
    cookie = first.headers['Set-Cookie']
    assert 'HttpOnly' in cookie and 'SameSite=Strict' in cookie
    assert 'Path=/console' in cookie
    page = local.get('/console/orders')
    assert page.status_code == 200
    text = page.get_data(as_text=True)
    assert mine.id in text and theirs.id in text


def test_every_page_forbids_inline_scripts_and_other_origins(local,
                                                             orders):
    order = _order(orders)
    local.get('/console/')
    for path in ('/console/', '/console/orders', '/console/workers',
                 '/console/schedules', '/console/orders/%s' % order.id):
        page = local.get(path)
        assert page.status_code == 200, (path, page.get_data(as_text=True))
        policy = page.headers['Content-Security-Policy']
        assert "default-src 'self'" in policy
        assert 'unsafe-inline' not in policy
        assert '<script>' not in page.get_data(as_text=True)


def test_the_order_page_draws_each_step_with_its_state(local, orders):
    order = _order(orders)
    local.get('/console/')
    text = local.get('/console/orders/%s' % order.id).get_data(as_text=True)
    assert '<svg class="graph"' in text
    assert text.count('data-step="process_type_order"') == 2
    assert 'Cancel this order' in text
    live = local.get('/console/orders/%s.json' % order.id).get_json()
    assert live['status'] == 'PENDING'
    assert set(live['steps']) == {'process_type_order',
                                  'check_certificate_status'}


def test_a_cancel_without_its_csrf_token_is_refused(local, orders):
    order = _order(orders)
    local.get('/console/')
    forged = local.post('/console/orders/%s/cancel' % order.id, data={})
    assert forged.status_code == 403
    assert 'CSRF' in forged.get_data(as_text=True)
    assert orders.get(order.id, all_projects=True).status == 'PENDING'
    wrong = local.post('/console/orders/%s/cancel' % order.id,
                       data={'csrf_token': 'f' * 64})
    assert wrong.status_code == 403


def test_a_confirmed_cancel_with_its_csrf_token_cancels(local, orders):
    order = _order(orders)
    local.get('/console/')
    confirm = local.get('/console/orders/%s/cancel' % order.id)
    done = local.post('/console/orders/%s/cancel' % order.id,
                      data={'csrf_token': _csrf(confirm)})
    assert done.status_code == 302
    assert orders.get(order.id, all_projects=True).status in (
        'CANCELLING', 'CANCELLED')


def test_a_logout_ends_the_login_on_the_server(local, orders):
    local.get('/console/')
    page = local.get('/console/')
    out = local.post('/console/logout', data={'csrf_token': _csrf(page)})
    assert out.status_code == 302
    # The cookie's login is gone: a new local login is made.
    assert local.get('/console/').status_code == 302


@pytest.fixture
def keystone_app(rest_conf, orders):
    """The Flask app in keystone mode (no middleware: the console is
    outside ``auth_token``)."""
    rest_conf.set_override('auth_strategy', 'keystone', group='api')
    schedules = schedule_api.ScheduleAPI(orders.database, rest_conf,
                                         orders=orders)
    return rest_app.create_app(rest_conf, orders, schedules)


def _browser(keystone_app, orders, project, roles):
    now = orders.now()
    login = logins.Login(
        token='t', csrf_token=logins.new_csrf_token(), user_id='u',
        user_name='u', project_id=project, project_name=project,
        roles=roles, expires_at=now + datetime.timedelta(hours=1))
    cookie = logins.LoginAPI(orders.database, orders.now).create(login)
    client = keystone_app.test_client()
    client.set_cookie(auth.COOKIE, cookie, path='/console')
    return client, login


def test_without_a_login_the_console_asks_for_one(keystone_app):
    response = keystone_app.test_client().get('/console/orders')
    assert response.status_code == 302
    assert response.headers['Location'].endswith('/console/login')
    form = keystone_app.test_client().get('/console/login')
    assert 'for="password"' in form.get_data(as_text=True)


def test_a_reader_sees_no_action_and_a_forged_one_is_refused(
        keystone_app, orders):
    order = _order(orders)
    reader, login = _browser(keystone_app, orders, conftest.PROJECT_A,
                             ('reader',))
    text = reader.get('/console/orders/%s' % order.id).get_data(
        as_text=True)
    assert order.id in text and 'Cancel this order' not in text
    confirm = reader.get('/console/orders/%s/cancel' % order.id)
    assert confirm.status_code == 403
    forged = reader.post('/console/orders/%s/cancel' % order.id,
                         data={'csrf_token': login.csrf_token})
    assert forged.status_code == 403
    assert orders.get(order.id, all_projects=True).status == 'PENDING'


def test_another_projects_order_is_not_found(keystone_app, orders):
    theirs = _order(orders, conftest.PROJECT_B)
    member, login = _browser(keystone_app, orders, conftest.PROJECT_A,
                             ('reader', 'member'))
    assert member.get('/console/orders/%s' % theirs.id).status_code == 404
    cancel = member.post('/console/orders/%s/cancel' % theirs.id,
                         data={'csrf_token': login.csrf_token})
    assert cancel.status_code == 404
    listed = member.get('/console/orders').get_data(as_text=True)
    assert theirs.id not in listed
    assert member.get('/console/workers').status_code == 403


def test_an_expired_login_is_no_login(keystone_app, orders):
    client, login = _browser(keystone_app, orders, conftest.PROJECT_A,
                             ('reader',))
    cookie = client.get_cookie(auth.COOKIE, path='/console').value
    logins_api = logins.LoginAPI(
        orders.database, lambda: login.expires_at + datetime.timedelta(
            seconds=1))
    assert logins_api.get(cookie) is None


def test_the_graph_puts_each_step_right_of_those_it_comes_after():
    from worker.api import values
    from worker.rest.console import graph

    def step(name, after=()):
        return values.StepState(name, after, 'WAITING', 0, None, None, None,
                                None, None)
    drawn = graph.layout([step('a'), step('b'), step('c', ('a', 'b')),
                          step('d', ('c',))])
    x = {node.name: node.x for node in drawn.nodes}
    assert x['a'] == x['b'] < x['c'] < x['d']
    assert len(drawn.edges) == 3
    assert drawn.width >= x['d'] + graph.NODE_WIDTH


def test_the_overview_counts_the_callers_project_only(keystone_app, orders):
    _order(orders)
    _order(orders, conftest.PROJECT_B)
    _order(orders, conftest.PROJECT_B)
    reader, _login = _browser(keystone_app, orders, conftest.PROJECT_A,
                              ('reader',))
    live = reader.get('/console/overview.json').get_json()
    assert live['by_status'] == {'PENDING': 1}
    text = reader.get('/console/').get_data(as_text=True)
    assert 'id="count-PENDING">1<' in text
    assert 'Workers alive' not in text


def test_the_orders_are_filtered_by_key_and_creation_time_and_counted(
        local, orders):
    keyed = orders.create('certificate', {}, project_id=conftest.PROJECT_A,
                          idempotency_key='renew-42')
    other = _order(orders)
    local.get('/console/')
    text = local.get('/console/orders?idempotency_key=renew-42').get_data(
        as_text=True)
    assert keyed.id in text and other.id not in text
    assert '1 order match' in text
    later = (keyed.created_at + datetime.timedelta(days=1)).strftime(
        '%Y-%m-%dT%H:%M')
    none = local.get('/console/orders?created_from=%s' % later).get_data(
        as_text=True)
    assert keyed.id not in none and '0 orders match' in none
    both = local.get('/console/orders?created_to=%s' % later).get_data(
        as_text=True)
    assert keyed.id in both and other.id in both
    assert local.get('/console/orders?created_to=soon').status_code == 400
