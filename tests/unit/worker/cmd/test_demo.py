"""What the demo tells a new user: where its state is, a configuration
file that ``barbican-retry-manage`` reads, and ids that command accepts."""

import os
import shlex

from oslo_config import cfg

from worker.cmd import demo
from worker.cmd import demo_state
from worker import conf as worker_conf
from worker.db import models


def test_the_config_file_names_the_demo_database_for_manage(tmp_path):
    path = demo_state.write_config(str(tmp_path), period=3, delay=4)

    # Read as barbican-retry-manage reads it.
    conf = cfg.ConfigOpts()
    worker_conf.register_opts(conf)
    # oslo.messaging registers it when it builds a transport.
    conf.register_opt(cfg.StrOpt('transport_url'))
    conf(['--config-file', path], default_config_files=[])
    assert path == str(tmp_path / 'demo.conf')
    assert conf.database.connection == 'sqlite:///%s' % (
        tmp_path / 'demo.sqlite')
    assert conf.get_location('connection', 'database').location == \
        cfg.Locations.user
    assert conf.transport_url == 'fake://'
    assert conf.simple_certificate.delay_before_update_seconds == 4
    assert conf['step:certificate.process_type_order'].backoff_max_seconds \
        == 2.0


def test_the_manage_command_is_the_virtualenv_script_on_the_config():
    argv = shlex.split(demo_state.manage_command('/tmp/a dir/demo.conf',
                                                 'order', 'show', 'ID'))

    assert os.path.basename(argv[0]) == 'barbican-retry-manage'
    assert argv[1:] == ['--config-file', '/tmp/a dir/demo.conf', 'order',
                        'show', 'ID']


def test_short_ids_are_unique_prefixes_of_8_characters_or_more():
    ids = ['0123456789', '0123456abc', 'fedcba9876']

    assert demo._short_ids(ids) == {'0123456789': '01234567',
                                    '0123456abc': '0123456a',
                                    'fedcba9876': 'fedcba98'}
    assert demo._short_ids(['01234567xy', '01234567zz']) == {
        '01234567xy': '01234567x', '01234567zz': '01234567z'}


def _summary(capsys, statuses, retried, temporary_dir):
    demo._print_summary(statuses, retried, '/s/demo.conf', temporary_dir)
    return capsys.readouterr().out.splitlines()


def test_the_summary_shows_a_retried_order_by_its_full_id(capsys):
    lines = _summary(capsys, {'a-1': models.ACTIVE, 'b-2': models.ACTIVE},
                     ['b-2'], None)

    assert lines[0].startswith('demo: look at an order: ')
    assert lines[0].endswith(
        ' --config-file /s/demo.conf order show b-2')
    # The counts stay last, as README.md shows them.
    assert lines[1:] == ['demo: 2 orders ACTIVE, 0 PENDING, 0 ERROR']


def test_the_summary_prefers_an_order_that_did_not_end_active(capsys):
    lines = _summary(capsys, {'a-1': models.ACTIVE, 'b-2': models.ERROR},
                     ['a-1'], None)

    assert lines[0].endswith(' order show b-2')
    assert lines[-1] == 'demo: 1 orders ACTIVE, 0 PENDING, 1 ERROR'


def test_a_temporary_state_dir_is_said_to_be_kept(capsys):
    lines = _summary(capsys, {'a-1': models.ACTIVE}, [], '/tmp/br-x')

    assert lines[1] == ('demo: /tmp/br-x is a temporary directory, kept '
                        'for that; remove it when done: rm -r /tmp/br-x')


def test_the_console_of_the_demo_is_noauth_on_the_loopback_only():
    from worker.cmd import demo_console
    from worker.rest import conf as api_conf

    conf = cfg.ConfigOpts()
    conf([], default_config_files=[])
    demo_console.configure(conf, 19999)
    assert (conf.api.auth_strategy, conf.api.bind_host,
            conf.api.bind_port) == (api_conf.NOAUTH, '127.0.0.1', 19999)


def test_the_console_option_is_off_by_default():
    assert demo._parse_args([]).console is False
    assert demo._parse_args(['--console', '--console-port', '8000']
                            ).console_port == 8000
