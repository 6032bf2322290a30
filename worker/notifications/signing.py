"""Standard Webhooks signatures (https://www.standardwebhooks.com).

A request carries ``webhook-id`` (its event's ``event_id``: the same for
every attempt, so a receiver drops duplicates by it),
``webhook-timestamp`` (seconds since the epoch when it is sent) and
``webhook-signature``: ``v1,`` and the base64 HMAC-SHA256 of
``id.timestamp.body`` under each key that signs, separated by spaces.
The signing itself is the ``standardwebhooks`` package's, the library
receivers verify with (pure Python, no dependency of its own).

The keys of a URL (``keys``): its own secret (``notification url
set-secret``), and during a rotation the previous one until
``previous_secret_until``. A URL without a secret of its own is signed
under ``[notifications] secret`` (its UTF-8 bytes as the key), so that
every request can be verified with the library; the previous key of a
URL's first rotation is that global secret.
"""

import base64
import binascii
import datetime
import secrets as secrets_module

import standardwebhooks

ID_HEADER = 'webhook-id'
TIMESTAMP_HEADER = 'webhook-timestamp'
SIGNATURE_HEADER = 'webhook-signature'
#: The prefix of a secret, as the specification and its libraries write
#: it: ``whsec_`` and the key in base64.
SECRET_PREFIX = 'whsec_'  # nosec B105: a prefix, not a secret
#: Bytes of a generated key; the specification asks for 24 to 64.
GENERATED_BYTES = 32
MIN_SECRET_BYTES = 24
MAX_SECRET_BYTES = 64


class InvalidSecret(ValueError):
    """Not a secret a URL may have; the message says why."""


def generate_secret():
    """A new random secret: ``whsec_`` and 32 random bytes in base64."""
    return SECRET_PREFIX + base64.b64encode(
        secrets_module.token_bytes(GENERATED_BYTES)).decode('ascii')


def check_secret(text):
    """Return ``text`` if it is a secret a URL may have.

    :raises InvalidSecret: not ``whsec_`` and 24 to 64 bytes in base64.
    """
    if not isinstance(text, str) or not text.startswith(SECRET_PREFIX):
        raise InvalidSecret('a secret starts with %r (then the key in '
                            'base64)' % SECRET_PREFIX)
    try:
        key = base64.b64decode(text[len(SECRET_PREFIX):], validate=True)
    except (binascii.Error, ValueError):
        raise InvalidSecret('the key after %r is not valid base64'
                            % SECRET_PREFIX) from None
    if not MIN_SECRET_BYTES <= len(key) <= MAX_SECRET_BYTES:
        raise InvalidSecret('a key is %d to %d bytes, not %d'
                            % (MIN_SECRET_BYTES, MAX_SECRET_BYTES, len(key)))
    return text


def keys(url, now, global_secret, unseal=None):
    """The keys that sign a request to ``url`` at ``now``, newest first.

    :param url: its ``notification_urls`` row (``secret``,
        ``previous_secret``, ``previous_secret_until``).
    :param now: the database server's time (naive UTC), against which
        ``previous_secret_until`` was written.
    :param global_secret: ``[notifications] secret``, the key of a URL
        without one of its own (and the previous key of its first
        rotation); None or empty: none.
    :param unseal: the secret of a stored value (``sealing``: the row
        holds them encrypted); None: stored as they are.
    :returns: ``whsec_…`` strings and the global secret's bytes, as
        ``standardwebhooks.Webhook`` takes them.
    """
    unseal = unseal or (lambda stored: stored)
    fallback = global_secret.encode('utf-8') if global_secret else None
    found = [unseal(url.secret) or fallback]
    until = url.previous_secret_until
    if until is not None and now < until:
        found.append(unseal(url.previous_secret) or fallback)
    return [key for key in dict.fromkeys(found) if key]


def headers(keys, event_id, timestamp, body):
    """The Standard Webhooks headers of one request.

    :param keys: as ``keys`` returns them; none: no ``webhook-signature``.
    :param timestamp: seconds since the epoch (an integer).
    :param body: the bytes sent (UTF-8).
    """
    signed_at = datetime.datetime.fromtimestamp(timestamp,
                                                datetime.timezone.utc)
    text = body.decode('utf-8')
    found = {ID_HEADER: event_id, TIMESTAMP_HEADER: str(timestamp)}
    if keys:
        found[SIGNATURE_HEADER] = ' '.join(
            standardwebhooks.Webhook(key).sign(event_id, signed_at, text)
            for key in keys)
    return found
