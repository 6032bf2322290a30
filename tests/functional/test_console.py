"""The operator console in a real browser: headless Chromium (Debian's,
driven by Selenium, tests/functional/browser.py) against the real
``barbican-retry-api``, worker and retry daemon under the real Keystone
(tests/functional/keystone.py), on each database.

A member logs in with the form (a reader with an existing token),
watches an order go from PENDING to ACTIVE on its page without a
reload, and cancels another from the page after confirming, by keyboard
alone; a reader sees no action; an action without its CSRF token is
refused; another project's order is not found. The pages' screenshots
are saved to doc/console/ (doc/console.md shows them).
"""

import pathlib

import pytest
import requests

from tests.functional import browser as browser_module
from tests.functional import databases
from tests.functional import processes
from tests.functional import rest_service

pytestmark = pytest.mark.browser

LATER = '2030-01-01T00:00:00Z'
SCREENSHOTS = pathlib.Path(processes.REPO_ROOT) / 'doc' / 'console'
#: The database whose run saves the screenshots.
SCREENSHOT_BACKEND = databases.BACKENDS[0]
WAIT = 60


@pytest.fixture(scope='module', params=databases.BACKENDS)
def api(request, tmp_path_factory, keystone, personas):
    """The API (its console logging in with the real Keystone) beside a
    worker and a retry daemon, on one database."""
    browser_module.require()
    yield from rest_service.deploy(
        request.param,
        tmp_path_factory.mktemp('console-%s' % request.param),
        {'auth_strategy': 'keystone', 'console_auth_url': keystone.url,
         'console_refresh_seconds': 1},
        {'keystone_authtoken': keystone.authtoken_options(
            personas.service)})


@pytest.fixture
def browser():
    """A fresh headless Chromium, quit at the end."""
    browser_module.require()
    opened = browser_module.Browser()
    yield opened.driver
    opened.close()


@pytest.fixture(scope='module')
def tokens(keystone, personas):
    """The ``X-Auth-Token`` header of each persona that creates orders."""
    return {name: {'X-Auth-Token': keystone.token(getattr(personas, name))}
            for name in ('a_member', 'b_member')}


def _log_in(driver, api, persona):
    driver.get(api.base_url + '/console/login')
    driver.find_element('id', 'username').send_keys(persona.username)
    driver.find_element('id', 'password').send_keys(persona.password)
    driver.find_element('id', 'project').send_keys(persona.project_id)
    driver.find_element('id', 'login').click()
    _wait(driver, lambda: driver.find_elements('id', 'who'),
          'the overview after the login')


def _log_in_with_token(driver, api, token, project_id):
    driver.get(api.base_url + '/console/login')
    driver.find_element('id', 'token').send_keys(token)
    driver.find_element('id', 'project').send_keys(project_id)
    driver.find_element('id', 'login').click()
    _wait(driver, lambda: driver.find_elements('id', 'who'),
          'the overview after the login')


def _press_on(driver, element_id, tabs=60):
    """Tab through the page until ``element_id`` has the focus, then
    press Enter on it: the action is reachable by keyboard."""
    from selenium.webdriver.common import action_chains
    from selenium.webdriver.common import keys
    for _ in range(tabs):
        action_chains.ActionChains(driver).send_keys(keys.Keys.TAB).perform()
        if driver.switch_to.active_element.get_attribute('id') == element_id:
            action_chains.ActionChains(driver).send_keys(
                keys.Keys.ENTER).perform()
            return
    raise AssertionError('%s is not reachable with Tab' % element_id)


def _wait(driver, condition, what):
    from selenium.webdriver.support import ui
    return ui.WebDriverWait(driver, WAIT, poll_frequency=0.2).until(
        lambda _driver: condition(), message=what)


def _text(driver, element_id):
    found = driver.find_elements('id', element_id)
    return found[0].text if found else None


def _screenshot(api, driver, name):
    if api.backend != SCREENSHOT_BACKEND:
        return
    SCREENSHOTS.mkdir(exist_ok=True)
    # The whole page, not the window: as tall as the page, then back.
    width, height = (driver.get_window_size()[key]
                     for key in ('width', 'height'))
    page_height = driver.execute_script(
        'return document.documentElement.scrollHeight;')
    driver.set_window_size(width, min(max(page_height + 100, height), 4000))
    driver.save_screenshot(str(SCREENSHOTS / ('%s.png' % name)))
    driver.set_window_size(width, height)


def test_a_member_watches_an_order_turn_active_without_a_reload(
        api, browser, personas, tokens):
    browser.get(api.base_url + '/console/login')
    _screenshot(api, browser, 'login')
    _log_in(browser, api, personas.a_member)
    order = api.create(tokens['a_member'])
    browser.get(api.base_url + '/console/orders/%s' % order['id'])
    assert _text(browser, 'order-status') == 'PENDING'
    # Survives only as long as the page is not loaded again.
    browser.execute_script('window.consoleTestMarker = 1;')
    _wait(browser, lambda: _text(browser, 'order-status') == 'ACTIVE',
          'the order ACTIVE on its page')
    assert browser.execute_script('return window.consoleTestMarker;') == 1
    states = {element.get_attribute('data-step'): element.text
              for element in browser.find_elements('css selector',
                                                   'span[data-step]')}
    assert set(states.values()) == {'DONE'}
    browser.get(api.base_url + '/console/orders/%s' % order['id'])
    _screenshot(api, browser, 'order')
    browser.get(api.base_url + '/console/orders')
    assert order['id'] in browser.find_element('id', 'orders').text
    _screenshot(api, browser, 'orders')


def test_a_member_cancels_an_order_from_its_page(api, browser, personas,
                                                 tokens):
    order = api.create(tokens['a_member'], not_before=LATER)
    _log_in(browser, api, personas.a_member)
    browser.get(api.base_url + '/console/orders/%s' % order['id'])
    # By keyboard alone: Tab to the action, Enter; then to the button.
    _press_on(browser, 'cancel')
    _screenshot(api, browser, 'confirm')
    _press_on(browser, 'confirm')
    _wait(browser, lambda: _text(browser, 'order-status') in (
        'CANCELLING', 'CANCELLED'), 'the order cancelled')
    api.wait_for_status(order['id'], 'CANCELLED', tokens['a_member'])


def test_a_reader_logged_in_with_a_token_sees_no_action(
        api, browser, keystone, personas, tokens):
    order = api.create(tokens['a_member'], not_before=LATER)
    _log_in_with_token(browser, api, keystone.token(personas.a_reader),
                       personas.project_a)
    assert 'reader' in _text(browser, 'who')
    browser.get(api.base_url + '/console/orders/%s' % order['id'])
    assert _text(browser, 'order-status') == 'PENDING'
    assert browser.find_elements('id', 'cancel') == []
    browser.get(api.base_url + '/console/orders/%s/cancel' % order['id'])
    assert browser.find_elements('id', 'confirm') == []


def test_an_action_without_its_csrf_token_is_refused(api, browser,
                                                     personas, tokens):
    order = api.create(tokens['a_member'], not_before=LATER)
    _log_in(browser, api, personas.a_member)
    cookies = {cookie['name']: cookie['value']
               for cookie in browser.get_cookies()}
    path = '/console/orders/%s/cancel' % order['id']
    forged = requests.post(api.base_url + path, cookies=cookies, data={},
                           allow_redirects=False, timeout=30)
    assert forged.status_code == 403
    assert 'CSRF' in forged.text
    shown = api.get('/v1/orders/%s' % order['id'], tokens['a_member'])
    assert shown.json()['status'] == 'PENDING'


def test_another_projects_order_is_not_found(api, browser, personas,
                                             tokens):
    theirs = api.create(tokens['b_member'], not_before=LATER)
    _log_in(browser, api, personas.a_member)
    browser.get(api.base_url + '/console/orders/%s' % theirs['id'])
    assert browser.find_element('tag name', 'h1').text == '404'
    browser.get(api.base_url + '/console/orders')
    assert theirs['id'] not in browser.find_element('id', 'orders').text


def test_an_admin_sees_the_deployment(api, browser, personas, tokens):
    api.create(tokens['b_member'])
    _log_in(browser, api, personas.admin)
    assert _text(browser, 'workers-alive') == '1'
    _screenshot(api, browser, 'overview')
    browser.get(api.base_url + '/console/workers')
    processes_text = browser.find_element('id', 'processes').text
    assert 'worker' in processes_text and 'alive' in processes_text
    _screenshot(api, browser, 'workers')
    browser.get(api.base_url + '/console/schedules')
    assert browser.find_elements('id', 'urls')
    _screenshot(api, browser, 'schedules')


def test_a_wrong_password_is_refused_with_a_sentence(api, browser,
                                                     personas):
    browser.get(api.base_url + '/console/login')
    browser.find_element('id', 'username').send_keys(
        personas.a_member.username)
    browser.find_element('id', 'password').send_keys('not-the-password')
    browser.find_element('id', 'project').send_keys(personas.project_a)
    browser.find_element('id', 'login').click()
    # The click does not wait for the answer page: wait for it.
    _wait(browser, lambda: _text(browser, 'failure') is not None,
          'the login page to answer')
    assert _text(browser, 'failure') == 'Keystone refused these credentials'
    assert browser.get_cookies() == []
