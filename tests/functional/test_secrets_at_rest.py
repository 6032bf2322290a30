"""URL secrets at rest: the table holds Fernet tokens, never a secret.

On every database, through ``barbican-retry-manage`` as an operator runs
it: a secret set is found nowhere in ``notification_urls`` read with raw
SQL; a secret stored in clear by the release before is encrypted by the
first ``notification key rotate``, and a rotation to a new key leaves
every row readable under the new key alone.
"""

from cryptography import fernet
import pytest
import sqlalchemy as sa

from tests.functional import processes

HOOK = 'http://127.0.0.1:9/hook'
LEGACY = 'http://127.0.0.1:9/legacy'
CLEAR = 'whsec_' + 'E' * 44


def _config(tmp_path, database_url, transport_url, key_file):
    return processes.write_config(
        tmp_path / 'manage.conf', database_url, transport_url,
        processes.new_topic(), {'notifications': {
            'allowed_hosts': '127.0.0.1', 'secret': 'shared',
            'secret_key_file': key_file}})


def _stored(database):
    """Every ``(url, secret, previous_secret)`` as the table holds them."""
    with database.engine.connect() as connection:
        return connection.execute(sa.text(
            'SELECT url, secret, previous_secret FROM notification_urls '
            'ORDER BY id')).all()


def test_no_secret_in_the_table_and_a_rotation_re_encrypts_every_row(
        database, database_url, transport_url, tmp_path):
    old_key, new_key = (fernet.Fernet.generate_key().decode()
                        for _ in range(2))
    key_file = tmp_path / 'keys'
    key_file.write_text(old_key + '\n')
    config = _config(tmp_path, database_url, transport_url, key_file)
    set_secret = processes.manage_json(
        config, 'notification', 'url', 'set-secret', HOOK, '--global')
    secret = set_secret['generated_secret']
    # A second secret, the first kept for a day: two secrets in the row.
    again = processes.manage_json(
        config, 'notification', 'url', 'set-secret', HOOK,
        '--keep-old-for', '1d')['generated_secret']
    # What the release before left: a secret in clear.
    processes.manage(config, 'notification', 'url', 'set-secret', LEGACY,
                     '--project', 'p')
    with database.engine.begin() as connection:
        connection.execute(sa.text(
            'UPDATE notification_urls SET secret = :clear WHERE url = '
            ':url'), {'clear': CLEAR, 'url': LEGACY})

    [(_, token, previous), (_, legacy, _)] = _stored(database)
    table = repr(_stored(database))
    assert secret not in table and again not in table
    assert secret[6:] not in table and again[6:] not in table
    assert fernet.Fernet(old_key).decrypt(token.encode()).decode() == again
    assert fernet.Fernet(old_key).decrypt(previous.encode()).decode() == \
        secret
    assert legacy == CLEAR

    # The new key first, the old one still decrypting; then rotate.
    key_file.write_text(new_key + '\n' + old_key + '\n')
    rotated = processes.manage_json(config, 'notification', 'key', 'rotate')
    assert rotated == [{'urls_encrypted': 2, 'of_which_were_in_clear': 1}]
    only_new = fernet.Fernet(new_key)
    [(_, token, previous), (_, legacy, _)] = _stored(database)
    assert [only_new.decrypt(value.encode()).decode()
            for value in (token, previous, legacy)] == [again, secret, CLEAR]
    assert CLEAR not in repr(_stored(database))

    # Without a key, no secret can be set.
    key_file.unlink()
    refused = processes.manage(config, 'notification', 'url', 'set-secret',
                               HOOK, check=False)
    assert refused.returncode != 0
    assert '[notifications] secret_key_file' in refused.stderr


@pytest.mark.parametrize('backend', ['sqlite'])
def test_a_first_secret_needs_an_owner_and_set_owner_changes_it(
        database, database_url, transport_url, tmp_path):
    key_file = tmp_path / 'keys'
    key_file.write_text(fernet.Fernet.generate_key().decode() + '\n')
    config = _config(tmp_path, database_url, transport_url, key_file)
    refused = processes.manage(config, 'notification', 'url', 'set-secret',
                               HOOK, check=False)
    assert refused.returncode != 0
    assert 'needs --project PROJECT' in refused.stderr
    assert processes.manage_json(
        config, 'notification', 'url', 'set-secret', HOOK, '--project',
        'tenant-a')['project_id'] == 'tenant-a'
    # A new secret keeps the owner; set-owner changes it alone.
    assert processes.manage_json(
        config, 'notification', 'url', 'set-secret',
        'HTTP://127.0.0.1:9/hook#')['project_id'] == 'tenant-a'
    before = _stored(database)
    assert processes.manage_json(
        config, 'notification', 'url', 'set-owner', HOOK, '--global') == {
        'url': HOOK, 'has_secret': True, 'project_id': None}
    assert _stored(database) == before
