"""URL secrets encrypted at rest, with Fernet keys the operator keeps.

``notification_urls.secret`` and ``previous_secret`` hold a Fernet token
of the ``whsec_…`` secret, never the secret: a copy of the database
(a backup, a replica, a read-only account) signs nothing. The keys are
in ``[notifications] secret_key_file``, one per line, as
``cryptography``'s ``Fernet.generate_key`` writes them: the first
encrypts, every one decrypts (``MultiFernet``), so that a new key is put
first, the workers read it (the file is read again when it changes), and
``barbican-retry-manage notification key rotate`` re-encrypts every row
with it; the old key can go once that is done.

A row written before encryption (``whsec_…`` in clear, from the release
before) is still read as it is, and encrypted by the first ``notification
key rotate``. A worker refuses to start while the database holds a secret
and no key is configured or readable (``check``).
"""

import functools
import os

from cryptography import fernet

from worker.notifications import signing

OPTION = '[notifications] secret_key_file'


class SealingError(ValueError):
    """No usable key: the message names ``OPTION`` and says why."""


class Sealer:
    """Encrypts and decrypts URL secrets under the keys of a key file.

    :param keys: Fernet keys (urlsafe base64 text), the first encrypting.
    """

    def __init__(self, keys):
        self._fernet = fernet.MultiFernet([fernet.Fernet(key)
                                           for key in keys])

    def seal(self, secret):
        """The token stored for ``secret`` (text), under the first key."""
        return self._fernet.encrypt(secret.encode('utf-8')).decode('ascii')

    def unseal(self, stored):
        """The secret of a stored value: a token, or a secret still in
        clear (written before encryption); None stays None.

        :raises SealingError: a token no key of the file decrypts.
        """
        if stored is None or is_clear(stored):
            return stored
        try:
            return self._fernet.decrypt(stored.encode('ascii')).decode(
                'utf-8')
        except (fernet.InvalidToken, UnicodeError):
            raise SealingError(
                'a URL secret is encrypted under a key that %s does not '
                'hold' % OPTION) from None

    def reseal(self, stored):
        """``stored`` encrypted under the first key (a clear secret is
        encrypted, a token re-encrypted); None stays None."""
        if stored is None:
            return None
        if is_clear(stored):
            return self.seal(stored)
        try:
            return self._fernet.rotate(stored.encode('ascii')).decode(
                'ascii')
        except fernet.InvalidToken:
            raise SealingError(
                'a URL secret is encrypted under a key that %s does not '
                'hold' % OPTION) from None


def is_clear(stored):
    """True if ``stored`` is a secret in clear, as written before
    encryption (Fernet tokens never start with ``whsec_``)."""
    return stored.startswith(signing.SECRET_PREFIX)


def generate_key():
    """A new Fernet key, as a line of the key file."""
    return fernet.Fernet.generate_key().decode('ascii')


def from_conf(conf):
    """The ``Sealer`` of ``[notifications] secret_key_file``, or None if
    the option is unset.

    The file is read again when its size or time changes, so that a key
    put first reaches running workers.

    :raises SealingError: the file cannot be read or holds no valid key.
    """
    path = conf.notifications.secret_key_file
    if not path:
        return None
    try:
        status = os.stat(path)
    except OSError as exc:
        raise SealingError('%s: cannot read %s: %s'
                           % (OPTION, path, exc.strerror)) from None
    return _load(path, status.st_mtime_ns, status.st_size)


@functools.lru_cache(maxsize=4)
def _load(path, mtime, size):
    """The ``Sealer`` of the key file at ``path`` as it is at ``mtime``
    and ``size`` (the cache's key)."""
    try:
        with open(path, encoding='ascii') as keys_file:
            keys = [line.strip() for line in keys_file
                    if line.strip() and not line.lstrip().startswith('#')]
    except (OSError, UnicodeError) as exc:
        raise SealingError('%s: cannot read %s: %s' % (OPTION, path, exc)) \
            from None
    if not keys:
        raise SealingError('%s: %s holds no key' % (OPTION, path))
    try:
        return Sealer(keys)
    except (ValueError, TypeError):
        raise SealingError(
            '%s: %s holds a line that is no Fernet key (32 bytes in '
            'urlsafe base64; "barbican-retry-manage notification key '
            'generate" makes one)' % (OPTION, path)) from None


def unsealer(conf):
    """What reads a stored secret under ``conf``'s keys: ``Sealer.unseal``;
    without keys, a secret in clear is read as it is and a token raises
    ``SealingError`` naming ``OPTION``.

    :raises SealingError: as ``from_conf``.
    """
    sealer = from_conf(conf)
    return sealer.unseal if sealer is not None else _clear_only


def _clear_only(stored):
    if stored is None or is_clear(stored):
        return stored
    raise SealingError('%s is not set: the URL\'s secret is stored '
                       'encrypted' % OPTION)


def required(conf):
    """The ``Sealer`` of ``conf``, which must have one (to write a secret).

    :raises SealingError: the option is unset, or as ``from_conf``.
    """
    sealer = from_conf(conf)
    if sealer is None:
        raise SealingError('%s is not set: URL secrets are stored '
                           'encrypted, under its keys' % OPTION)
    return sealer


def check(conf, database):
    """At start: refuse to go on while the database holds URL secrets
    that this process could not read.

    A URL's previous secret counts as its secret does: during a rotation
    it signs too, and ``notification key rotate`` re-encrypts it.

    :raises SealingError: naming ``OPTION``: a secret exists and the
        option is unset, or its file cannot be read, or a stored token is
        under no key of the file.
    """
    sealer = from_conf(conf)
    store = database.repositories.notifications
    with database.reader() as session:
        stored = [[value for value in (url.secret, url.previous_secret)
                   if value is not None]
                  for url in store.list_urls(session)]
    stored = [values for values in stored if values]
    if not stored:
        return
    if sealer is None:
        raise SealingError(
            '%s is not set, and %d notification URL(s) have a secret of '
            'their own: set it to the key file their secrets are '
            'encrypted under' % (OPTION, len(stored)))
    for values in stored:
        for value in values:
            sealer.unseal(value)
