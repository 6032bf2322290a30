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


def test_gunicorn_runs_the_workers_and_threads_of_api(tmp_path):
    from worker.rest import wsgi
    config = tmp_path / 'api.conf'
    config.write_text('[api]\nworkers = 3\nthreads = 24\nbind_port = 9400\n')
    server = wsgi._Gunicorn(wsgi.load_config(['--config-file',
                                              str(config)]))
    assert server.cfg.workers == 3
    assert server.cfg.threads == 24
    assert server.cfg.worker_class_str == 'gthread'
    assert server.cfg.bind == ['127.0.0.1:9400']


def test_a_create_waits_on_io_so_a_process_serves_16_at_once():
    # Creates spend most of their time waiting for the database's commit
    # and the broker's confirm: 4 threads a process held the creates in
    # flight to 8 on 2 workers (the REST benchmark, doc/rest.md).
    assert conftest.config_for().api.threads == 16
