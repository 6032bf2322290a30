"""URL secrets encrypted at rest under the operator's Fernet keys."""

import datetime

from cryptography import fernet
import pytest

from tests import config
from tests import singular
from tests.unit.worker.notifications import test_deliveries as deliveries
from worker.db import memory
from worker.notifications import sealing
from worker.notifications import subscriptions

SECRET = 'whsec_' + 'D' * 44
NOW = datetime.datetime(2026, 11, 28, 12, 0, 0)


def _key_file(tmp_path, *keys, name='keys'):
    path = tmp_path / name
    path.write_text('# newest first\n' + '\n'.join(keys) + '\n')
    return str(path)


def _conf(path=None, **overrides):
    return config.make_conf(**{'notifications.secret_key_file': path},
                            **overrides)


def test_a_secret_is_stored_as_a_token_that_only_the_keys_open(tmp_path):
    key = sealing.generate_key()
    sealer = sealing.from_conf(_conf(_key_file(tmp_path, key)))
    stored = sealer.seal(SECRET)
    assert SECRET not in stored and 'D' * 10 not in stored
    assert sealer.unseal(stored) == SECRET
    assert fernet.Fernet(key).decrypt(stored.encode()) == SECRET.encode()
    other = sealing.from_conf(_conf(_key_file(
        tmp_path, sealing.generate_key(), name='other')))
    with pytest.raises(sealing.SealingError, match='secret_key_file'):
        other.unseal(stored)


def test_a_rotation_new_key_first_old_keys_still_open(tmp_path):
    old, new = sealing.generate_key(), sealing.generate_key()
    before = sealing.from_conf(_conf(_key_file(tmp_path, old)))
    stored = before.seal(SECRET)
    during = sealing.from_conf(_conf(_key_file(tmp_path, new, old,
                                               name='two')))
    assert during.unseal(stored) == SECRET
    resealed = during.reseal(stored)
    # Under the new key alone now: the old one can go.
    after = sealing.from_conf(_conf(_key_file(tmp_path, new, name='new')))
    assert after.unseal(resealed) == SECRET
    # A secret in clear (from the release before) is read as it is, and
    # encrypted by a rotation.
    assert during.unseal(SECRET) == SECRET
    assert after.unseal(during.reseal(SECRET)) == SECRET
    assert not sealing.is_clear(during.reseal(SECRET))


@pytest.mark.parametrize('content, why', [
    (None, 'cannot read'),
    ('', 'holds no key'),
    ('not-a-key\n', 'no Fernet key'),
])
def test_a_bad_key_file_is_an_error_naming_the_option(tmp_path, content,
                                                      why):
    path = tmp_path / 'keys'
    if content is not None:
        path.write_text(content)
    with pytest.raises(sealing.SealingError,
                       match=r'\[notifications\] secret_key_file.*' + why):
        sealing.from_conf(_conf(str(path)))


def _with_secret(database, stored):
    [url_id] = subscriptions.url_ids(database, [deliveries.URL], NOW)
    with database.session() as session, session.begin():
        database.repositories.notifications.set_secret(
            session, url_id, stored, None, NOW)


def test_a_worker_refuses_to_start_without_the_key_of_its_secrets(
        tmp_path):
    database = memory.InMemoryDatabase()
    sealing.check(_conf(), database)  # no secret: no key needed
    key = sealing.generate_key()
    path = _key_file(tmp_path, key)
    _with_secret(database, sealing.from_conf(_conf(path)).seal(SECRET))
    with pytest.raises(sealing.SealingError,
                       match=r'\[notifications\] secret_key_file is not '
                             r'set, and 1 notification URL'):
        sealing.check(_conf(), database)
    with pytest.raises(sealing.SealingError, match='cannot read'):
        sealing.check(_conf(str(tmp_path / 'gone')), database)
    with pytest.raises(sealing.SealingError, match='does not hold'):
        sealing.check(_conf(_key_file(tmp_path, sealing.generate_key(),
                                      name='wrong')), database)
    sealing.check(_conf(path), database)


def test_a_previous_secret_needs_its_key_too(tmp_path, sqlite_database):
    """During a rotation (``--keep-old-for``) the secret replaced still
    signs: a worker that could not read it would fail its deliveries.

    On SQLite: the secret is cleared as the operator's ``reseal`` writes
    (``worker.db.queries``)."""
    database = sqlite_database
    old_key, new_key = sealing.generate_key(), sealing.generate_key()
    old = _key_file(tmp_path, old_key, name='old')
    new = _key_file(tmp_path, new_key, name='new')
    [url_id] = subscriptions.url_ids(database, [deliveries.URL], NOW)
    store = database.repositories.notifications
    for path, until in ((old, None), (new, NOW)):
        with database.session() as session, session.begin():
            store.set_secret(session, url_id, sealing.from_conf(
                _conf(path)).seal(SECRET), until, NOW)
    with pytest.raises(sealing.SealingError, match='does not hold'):
        sealing.check(_conf(new), database)
    sealing.check(_conf(_key_file(tmp_path, new_key, old_key, name='both')),
                  database)
    # The previous secret the only one stored.
    with database.session() as session, session.begin():
        url = singular.get_url(store, session, url_id)
        assert database.queries.notifications.replace_secrets(
            session, url_id, (url.secret, url.previous_secret),
            (None, url.previous_secret))
    with pytest.raises(sealing.SealingError,
                       match=r'\[notifications\] secret_key_file is not '
                             r'set, and 1 notification URL'):
        sealing.check(_conf(), database)


def test_a_delivery_signs_with_the_secret_the_token_holds(
        tmp_path, monkeypatch):
    # The deliveries' database: its certificate plugin issues at once.
    database = deliveries.database.__wrapped__(monkeypatch)
    path = _key_file(tmp_path, sealing.generate_key())
    sender = deliveries.ScriptedSender()
    worker = deliveries.Worker(database, sender, **{
        'notifications.secret_key_file': path})
    order_id = deliveries._order(database)
    _with_secret(database, sealing.from_conf(_conf(path)).seal(SECRET))

    worker.run(deliveries.DELIVERY, order_id, 0)

    assert sender.keys == [[SECRET]]


def test_a_key_problem_is_not_the_url_s_failure(tmp_path, monkeypatch,
                                                caplog):
    """A secret no configured key opens is the operator's problem: the
    URL stays available, no failure is counted, the delivery retries
    (every ``retry_max_seconds``) until the key is there, and an ERROR
    names the option."""
    database = deliveries.database.__wrapped__(monkeypatch)
    path = _key_file(tmp_path, sealing.generate_key())
    options = {'notifications.max_consecutive_failures': 1,
               'notifications.retry_max_seconds': 30.0}
    sender = deliveries.ScriptedSender()
    order_id = deliveries._order(database)
    _with_secret(database, sealing.from_conf(_conf(path)).seal(SECRET))

    deliveries.Worker(database, sender, **options).run(
        deliveries.DELIVERY, order_id, 0)

    assert sender.sent == []
    url = deliveries._url(database)
    assert (url.available, url.failures) == (True, 0)
    step = deliveries._step(database, order_id, deliveries.DELIVERY)
    assert (step.status, step.failures) == (
        deliveries.models.STEP_PENDING, 0)
    assert 'secret_key_file' in step.last_error
    [retry] = deliveries._retries(database, order_id)
    assert retry.retry_at == deliveries.NOW + datetime.timedelta(seconds=30)
    [error] = [record.getMessage() for record in caplog.records
               if record.levelname == 'ERROR']
    assert '[notifications] secret_key_file' in error

    # The key given, the retry sends.
    deliveries.Worker(database, sender, **options, **{
        'notifications.secret_key_file': path}).run(
            deliveries.DELIVERY, order_id, step.generation)
    assert sender.keys == [[SECRET]]
