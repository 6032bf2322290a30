"""``[api]``: noauth refuses to listen beyond the loopback network."""

import pytest

from tests.unit.worker.rest import conftest
from worker.rest import conf as api_conf


@pytest.mark.parametrize('host', ['0.0.0.0', '10.0.0.5', '::', '::1',
                                  'api.example.org'])
def test_noauth_refuses_an_address_outside_127_0_0_0_8(host):
    conf = conftest.config_for(**{'api.auth_strategy': 'noauth',
                                  'api.bind_host': host})
    with pytest.raises(api_conf.RefusedBind) as refused:
        api_conf.check_bind(conf)
    assert '[api] bind_host' in str(refused.value)
    assert '[api] auth_strategy = noauth' in str(refused.value)


@pytest.mark.parametrize('strategy, host', [
    ('noauth', '127.0.0.1'), ('noauth', '127.1.2.3'),
    ('keystone', '0.0.0.0')])
def test_allowed_binds(strategy, host):
    api_conf.check_bind(conftest.config_for(**{
        'api.auth_strategy': strategy, 'api.bind_host': host}))


def test_the_console_script_exits_naming_the_option(tmp_path):
    from worker.rest import wsgi
    config = tmp_path / 'api.conf'
    config.write_text('[api]\nauth_strategy = noauth\n'
                      'bind_host = 0.0.0.0\n')
    with pytest.raises(SystemExit) as stopped:
        wsgi.load_config(['--config-file', str(config)])
    assert 'bind_host' in str(stopped.value.code)
