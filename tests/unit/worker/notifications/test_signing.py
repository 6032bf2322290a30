"""Standard Webhooks signatures, verified with the ``standardwebhooks``
library as a receiver would; no database."""

import base64
import datetime
import time
import types

import pytest
import standardwebhooks

from worker.notifications import signing

NOW = datetime.datetime(2026, 11, 26, 12, 0, 0)
GLOBAL = 'the-global-secret'
BODY = b'{"event":"order.created","event_id":"e1","sequence":1}'


def _secret(fill):
    return 'whsec_' + base64.b64encode(bytes([fill]) * 32).decode()


OLD, NEW = _secret(1), _secret(2)


def _url(secret=None, previous=None, until=None):
    return types.SimpleNamespace(secret=secret, previous_secret=previous,
                                 previous_secret_until=until)


def _verify(key, found, body=BODY):
    return standardwebhooks.Webhook(key).verify(body, found,
                                                json_parse=False)


def test_every_key_signs_and_the_library_verifies_each():
    found = signing.headers([NEW, OLD], 'e1', int(time.time()), BODY)
    assert found['webhook-id'] == 'e1'
    assert found['webhook-signature'].count('v1,') == 2
    _verify(NEW, found)
    _verify(OLD, found)
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        _verify(_secret(3), found)
    # The body is what is signed.
    with pytest.raises(standardwebhooks.WebhookVerificationError):
        _verify(NEW, found, BODY.replace(b'e1', b'e2'))


def test_a_request_older_than_the_tolerance_is_refused():
    stale = signing.headers([NEW], 'e1', int(time.time()) - 301, BODY)
    with pytest.raises(standardwebhooks.WebhookVerificationError,
                       match='too old'):
        _verify(NEW, stale)


def test_no_key_no_signature_header():
    found = signing.headers([], 'e1', 1700000000, BODY)
    assert found == {'webhook-id': 'e1', 'webhook-timestamp': '1700000000'}


def test_a_url_without_a_secret_is_signed_with_the_global_one():
    keys = signing.keys(_url(), NOW, GLOBAL)
    assert keys == [GLOBAL.encode()]
    # A receiver given the global secret verifies with its bytes.
    _verify(GLOBAL.encode(),
            signing.headers(keys, 'e1', int(time.time()), BODY))
    assert signing.keys(_url(), NOW, None) == []


def test_the_previous_secret_signs_until_it_expires():
    later = NOW + datetime.timedelta(hours=1)
    assert signing.keys(_url(NEW, OLD, later), NOW, GLOBAL) == [NEW, OLD]
    assert signing.keys(_url(NEW, OLD, later), later, GLOBAL) == [NEW]
    assert signing.keys(_url(NEW, None, None), NOW, GLOBAL) == [NEW]
    # The first rotation: the global secret was the URL's key.
    assert signing.keys(_url(NEW, None, later), NOW, GLOBAL) == [
        NEW, GLOBAL.encode()]


def test_a_generated_secret_is_valid_and_new_each_time():
    first, second = signing.generate_secret(), signing.generate_secret()
    assert first != second
    assert signing.check_secret(first) == first
    assert len(base64.b64decode(first[len('whsec_'):])) == 32


@pytest.mark.parametrize('text, error', [
    ('abc', "starts with 'whsec_'"),
    ('whsec_not*base64', 'not valid base64'),
    ('whsec_' + base64.b64encode(b'x' * 16).decode(), 'not 16'),
    ('whsec_' + base64.b64encode(b'x' * 65).decode(), 'not 65'),
])
def test_an_invalid_secret_is_refused_saying_why(text, error):
    with pytest.raises(signing.InvalidSecret, match=error):
        signing.check_secret(text)
