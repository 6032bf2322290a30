"""``openstack retry …`` as people and scripts run it: the real
``openstack`` command of the virtualenv, a ``clouds.yaml`` of Keystone
personas, the ``retry`` endpoint found in the real Keystone's catalog,
and a real ``barbican-retry-api`` validating the tokens (with a worker
and retry daemon behind it, on SQLite: the client, not the database, is
under test).
"""

import json
import os
import subprocess  # nosec B404: the tests run the openstack command
import sys
import uuid

import pytest
import yaml

from tests.functional import rest_service

OPENSTACK = os.path.join(os.path.dirname(sys.executable), 'openstack')
CLOUDS = ('a_member', 'a_reader', 'b_member')
#: Keystone's bootstrap region: no retry endpoint in it.
REGION_ONE = 'RegionOne'
LATER = '2030-01-01T00:00:00Z'


@pytest.fixture(scope='module')
def api(tmp_path_factory, keystone, personas):
    """The API on SQLite, validating tokens with the real Keystone."""
    yield from rest_service.deploy(
        'sqlite', tmp_path_factory.mktemp('openstack-client'),
        {'auth_strategy': 'keystone'},
        {'keystone_authtoken': keystone.authtoken_options(
            personas.service)})


@pytest.fixture(scope='module')
def region(api, keystone):
    """The region of the API's ``retry`` endpoint in Keystone's catalog
    (removed at the end)."""
    region, service_id = keystone.register_service('retry', api.base_url)
    yield region
    keystone.unregister_service(region, service_id)


@pytest.fixture(scope='module')
def openstack(tmp_path_factory, api, keystone, personas, region):
    """Returns ``run(cloud, *args)``: ``openstack retry ARGS`` as the
    cloud ``cloud`` of a clouds.yaml (a persona's); its CompletedProcess."""
    directory = tmp_path_factory.mktemp('clouds')
    clouds = {'clouds': {name: {
        'auth_type': 'password',
        'auth': {'auth_url': keystone.url,
                 'user_id': getattr(personas, name).user_id,
                 'password': getattr(personas, name).password,
                 'project_id': getattr(personas, name).project_id},
        'identity_api_version': 3,
        'region_name': region,
        'interface': 'public'} for name in CLOUDS}}
    # The bootstrap's region has no retry endpoint: a_member_override
    # finds the API at its retry_endpoint_override only.
    clouds['clouds']['a_member_region_one'] = dict(
        clouds['clouds']['a_member'], region_name=REGION_ONE)
    clouds['clouds']['a_member_override'] = dict(
        clouds['clouds']['a_member_region_one'],
        retry_endpoint_override=api.base_url)
    path = directory / 'clouds.yaml'
    path.write_text(yaml.safe_dump(clouds))
    env = {name: value for name, value in os.environ.items()
           if not name.startswith('OS_')}
    # stevedore caches the entry points it found under XDG_CACHE_HOME: a
    # stale cache must not hide the plugin.
    env.update(OS_CLIENT_CONFIG_FILE=str(path),
               XDG_CACHE_HOME=str(directory / 'cache'))

    def run(cloud, *args):
        return subprocess.run(  # nosec B603: a fixed command
            [OPENSTACK, '--os-cloud', cloud, 'retry', *args],
            env=env, capture_output=True, text=True, timeout=120)
    return run


def _json(completed):
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout)


def test_create_list_show_and_history(api, openstack, personas, keystone):
    key = 'cli-%s' % uuid.uuid4()
    create = ('order', 'create', '--type', 'certificate', '--meta',
              json.dumps(rest_service.CREATE['meta']), '--idempotency-key',
              key, '-f', 'json')
    order = _json(openstack('a_member', *create))
    assert (order['type'], order['project_id'], order['idempotency_key']) \
        == ('certificate', personas.project_a, key)
    assert order['status'] in ('PENDING', 'ACTIVE')
    # The same key: the same order.
    assert _json(openstack('a_member', *create))['id'] == order['id']
    token = {'X-Auth-Token': keystone.token(personas.a_reader)}
    api.wait_for_status(order['id'], 'ACTIVE', token)
    shown = openstack('a_reader', 'order', 'show', order['id'], '-f',
                      'value', '-c', 'status')
    assert (shown.returncode, shown.stdout.strip()) == (0, 'ACTIVE'), \
        shown.stderr
    listed = _json(openstack('a_reader', 'order', 'list', '-f', 'json'))
    [row] = [found for found in listed if found['id'] == order['id']]
    assert row['status'] == 'ACTIVE'
    history = _json(openstack('a_reader', 'order', 'history', order['id'],
                              '-f', 'json'))
    assert [(run['step'], run['result']) for run in history
            if run['step'] == 'process_type_order'] == [
        ('process_type_order', 'retry'), ('process_type_order', 'done')]
    types = _json(openstack('a_reader', 'order', 'type', 'list', '-f',
                            'json'))
    assert 'certificate' in [found['name'] for found in types]


def test_another_project_and_a_reader_are_refused(openstack):
    order = _json(openstack('a_member', 'order', 'create', '--type',
                            'certificate', '--not-before', LATER, '-f',
                            'json'))
    hidden = openstack('b_member', 'order', 'show', order['id'])
    assert hidden.returncode == 1
    assert 'retry.order_not_found (HTTP 404)' in hidden.stderr
    assert order['id'] not in [found['id'] for found in _json(openstack(
        'b_member', 'order', 'list', '-f', 'json'))]
    refused = openstack('a_reader', 'order', 'cancel', order['id'])
    assert refused.returncode == 1
    assert 'retry.forbidden (HTTP 403)' in refused.stderr


def test_cancel_and_resume(api, openstack, personas, keystone):
    later = _json(openstack('a_member', 'order', 'create', '--type',
                            'certificate', '--not-before', LATER, '-f',
                            'json'))
    cancelled = _json(openstack('a_member', 'order', 'cancel', later['id'],
                                '-f', 'json'))
    assert cancelled['status'] == 'CANCELLED'
    assert 'user %s' % personas.a_member.user_id in \
        cancelled['error_reason']
    # Only an ERROR order resumes: the test plugin's fanout fails its
    # first run of check_domains for good, and passes the next.
    failing = _json(openstack('a_member', 'order', 'create', '--type',
                              'recording_fanout', '--meta', json.dumps({
                                  'fail_step': 'check_domains',
                                  'fail_runs': 1}), '-f', 'json'))
    token = {'X-Auth-Token': keystone.token(personas.a_member)}
    api.wait_for_status(failing['id'], 'ERROR', token)
    refused = openstack('a_member', 'order', 'resume', later['id'])
    assert 'retry.order_not_resumable (HTTP 409)' in refused.stderr
    resumed = _json(openstack('a_member', 'order', 'resume',
                              failing['id'], '-f', 'json'))
    assert resumed['status'] in ('PENDING', 'ACTIVE')
    api.wait_for_status(failing['id'], 'ACTIVE', token)


def test_the_endpoint_override_of_clouds_yaml(openstack):
    created = _json(openstack('a_member_override', 'order', 'create',
                              '--type', 'certificate', '--not-before',
                              LATER, '-f', 'json'))
    shown = openstack('a_member', 'order', 'show', created['id'], '-f',
                      'value', '-c', 'status')
    assert (shown.returncode, shown.stdout.strip()) == (0, 'PENDING')
    # Without the override, RegionOne's catalog has no retry service.
    missing = openstack('a_member_region_one', 'order', 'type', 'list')
    assert missing.returncode == 1
    assert 'retry' in missing.stderr and REGION_ONE in missing.stderr, \
        missing.stderr
