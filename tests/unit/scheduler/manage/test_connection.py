"""The database ``barbican-retry-manage`` opens, and its refusals: no
``[database] connection``, a SQLite file that is not there, no schema or
an older one.
Each refusal creates nothing."""

import os

from oslo_config import cfg
import pytest

from scheduler.manage import connection
from worker import conf as worker_conf
from worker.db import migration


def _conf(tmp_path, text=''):
    """A configuration read from one file holding ``text`` only."""
    path = tmp_path / 'manage.conf'
    path.write_text(text)
    conf = cfg.ConfigOpts()
    worker_conf.register_opts(conf)
    conf(['--config-file', str(path)], default_config_files=[])
    return conf


def _sqlite_conf(tmp_path, name='db.sqlite'):
    return _conf(tmp_path, '[database]\nconnection = sqlite:///%s\n'
                 % (tmp_path / name))


def _refusal(conf, **kwargs):
    with pytest.raises(SystemExit) as exit_info:
        connection.open_database(conf, ['--config-file', 'my.conf'],
                                 **kwargs)
    return str(exit_info.value.code)


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path, monkeypatch):
    # The default connection is a file relative to the working directory:
    # what would be created lands in tmp_path, where the tests look.
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv('OS_DATABASE__CONNECTION', raising=False)


def test_without_a_connection_it_names_the_option_and_creates_nothing(
        tmp_path):
    message = _refusal(_conf(tmp_path))

    assert message.startswith('barbican-retry-manage: [database] connection '
                              'is not set (configuration files read: %s)'
                              % (tmp_path / 'manage.conf'))
    assert 'pass --config-file with a [database] connection' in message
    assert sorted(os.listdir(tmp_path)) == ['manage.conf']


def test_a_connection_set_in_the_environment_counts(tmp_path, monkeypatch):
    url = 'sqlite:///%s' % (tmp_path / 'env.sqlite')
    monkeypatch.setenv('OS_DATABASE__CONNECTION', url)

    assert connection.configured_url(_conf(tmp_path)) == url


def test_a_missing_sqlite_file_is_not_created(tmp_path):
    message = _refusal(_sqlite_conf(tmp_path))

    assert message == (
        'barbican-retry-manage: the SQLite database %s of [database] '
        'connection does not exist; create it with: barbican-retry-manage '
        '--config-file my.conf db upgrade' % (tmp_path / 'db.sqlite'))
    assert sorted(os.listdir(tmp_path)) == ['manage.conf']


def test_db_upgrade_may_create_the_sqlite_file(tmp_path):
    database = connection.open_database(_sqlite_conf(tmp_path), [],
                                        create=True, migrated=False)
    database.dispose()

    assert (tmp_path / 'db.sqlite').exists()


def test_a_database_without_schema_is_refused_naming_db_upgrade(tmp_path):
    (tmp_path / 'db.sqlite').touch()

    message = _refusal(_sqlite_conf(tmp_path))

    assert message == (
        'barbican-retry-manage: the database sqlite:///%s has no schema; '
        'upgrade it with: barbican-retry-manage --config-file my.conf db '
        'upgrade' % (tmp_path / 'db.sqlite'))


def _migrated_to(conf, revision):
    database = connection.open_database(conf, [], create=True,
                                        migrated=False)
    migration.upgrade(database.engine, revision)
    database.dispose()


def test_a_database_behind_this_code_is_refused_naming_db_upgrade(
        tmp_path):
    conf = _sqlite_conf(tmp_path)
    _migrated_to(conf, '0005')

    message = _refusal(conf)

    assert message == (
        "barbican-retry-manage: the database sqlite:///%s is at schema "
        "revision 0005, older than this code's %s; upgrade it with: "
        "barbican-retry-manage --config-file my.conf db upgrade"
        % (tmp_path / 'db.sqlite', ', '.join(migration.head_revisions())))


def test_a_revision_of_a_later_release_is_not_behind():
    # The release before runs on the schema of an additive migration.
    assert not migration.is_behind('9999')


def test_db_current_reads_a_database_without_schema(tmp_path):
    (tmp_path / 'db.sqlite').touch()

    database = connection.open_database(_sqlite_conf(tmp_path), [],
                                        migrated=False)
    try:
        assert migration.current_revision(database.engine) is None
    finally:
        database.dispose()


def test_a_migrated_database_opens(tmp_path):
    conf = _sqlite_conf(tmp_path)
    _migrated_to(conf, 'head')

    database = connection.open_database(conf, [])
    try:
        assert migration.stored_revision(database.engine) in \
            migration.head_revisions()
    finally:
        database.dispose()


def test_the_suggested_command_quotes_what_the_shell_would_split():
    assert connection.command_line(
        ['--config-file', '/tmp/a dir/demo.conf'], 'db', 'upgrade') == (
        "barbican-retry-manage --config-file '/tmp/a dir/demo.conf' "
        "db upgrade")
