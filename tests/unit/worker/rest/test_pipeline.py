"""The middleware around the app: with keystone, auth_token refuses a
request without a token before the app reads a header, while ``/`` and
``/healthcheck`` answer anyone; every response has a request id."""

from keystonemiddleware import auth_token

from tests.unit.worker.rest import conftest
from worker.rest import wsgi


def test_keystone_mode_refuses_a_request_without_a_token(
        rest_conf, application):
    rest_conf.set_override('auth_strategy', 'keystone', group='api')
    for group, opts in auth_token.list_opts():
        rest_conf.register_opts(opts, group=group)
    # Named in the 401's WWW-Authenticate; never called for no token.
    rest_conf.set_override('www_authenticate_uri',
                           'http://keystone.invalid/identity',
                           group='keystone_authtoken')
    http = conftest.Client(application())
    # The identity headers a caller sends are not a token.
    refused = http.get('/v1/orders', headers=conftest.ADMIN)
    assert refused.status_code == 401
    assert 'keystone.invalid' in refused.headers['WWW-Authenticate']
    assert refused.headers['x-openstack-request-id'].startswith('req-')
    assert http.get('/').status_code == 200
    assert http.get('/healthcheck').status_code == 200


def test_the_wsgi_callable_reads_the_file_the_environment_names(
        monkeypatch):
    monkeypatch.setenv(wsgi.CONFIG_VARIABLE, '/etc/retry/api.conf')
    assert wsgi._config_argv() == ['--config-file', '/etc/retry/api.conf']
    monkeypatch.delenv(wsgi.CONFIG_VARIABLE)
    monkeypatch.setattr(wsgi.sys, 'argv', [
        'uwsgi', '--http', ':9312', '--config-file', 'a.conf',
        '--config-file=b.conf'])
    assert wsgi._config_argv() == ['--config-file', 'a.conf',
                                   '--config-file=b.conf']


def test_noauth_answers_only_local_callers_never_through_a_proxy(http):
    # A WSGI server other than barbican-retry-api's own (mod_wsgi,
    # uWSGI with worker.rest.wsgi:application) listens where it is told,
    # whatever [api] bind_host says: the headers of a caller from
    # elsewhere, or relayed by a proxy, name no one.
    for environ in ({'REMOTE_ADDR': '10.0.0.5'},
                    {'REMOTE_ADDR': '2001:db8::5'},
                    {'REMOTE_ADDR': '127.0.0.1',
                     'HTTP_X_FORWARDED_FOR': '10.0.0.5'},
                    {'REMOTE_ADDR': '127.0.0.1',
                     'HTTP_FORWARDED': 'for=10.0.0.5'}):
        refused = http.get('/v1/orders', headers=conftest.ADMIN,
                           environ_overrides=environ)
        assert (refused.status_code, conftest.error_code(refused)) == (
            403, 'retry.forbidden'), environ
        assert 'noauth' in refused.get_json()['errors'][0]['detail']
        assert http.get('/healthcheck',
                        environ_overrides=environ).status_code == 200
    for address in ('127.0.0.1', '127.0.1.1', '::1'):
        assert http.get('/v1/orders', headers=conftest.ADMIN,
                        environ_overrides={'REMOTE_ADDR': address}
                        ).status_code == 200, address
