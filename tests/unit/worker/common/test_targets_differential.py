"""The URL guard and the HTTP client agree on the host (differential).

Over generated URLs full of what parsers split differently (backslashes,
``@``, ``%``-escapes, IPv6 zones, unicode dots, odd ports, userinfo),
every URL the guard accepts is sent by ``requests`` to the host the guard
judged, and so is the canonical URL it returns (which is what is stored
and sent). The connection host is derived as ``requests`` derives it: a
``PreparedRequest``, then its adapter's connection pool key, then
urllib3's pool for it (no connection is made).
"""

import ipaddress

import hypothesis
from hypothesis import strategies as st
import pytest
import requests
from requests import adapters

from worker.common import targets

_ADAPTER = adapters.HTTPAdapter()

_HOST_PIECES = st.sampled_from([
    'a', 'B', 'example', 'com', '169.254.169.254', '127.0.0.1', '127.1',
    '0x7f', '1', '.', '..', '\\', '@', ':', '%', '%2e', '%2E', '%5c',
    '%40', '%41', '\u3002', '\uff0e', '\uff61', '-', '_', '[', ']',
    '[::1]', '[fe80::1%25eth0]', '[::ffff:169.254.169.254]',
    '[2001:DB8::1]', 'user:pw@', 'x@', '@', '#', '?', '/', 'é',
    'xn--e1afmkfd', '%00', ' ',
])
_PORTS = st.sampled_from(['', ':', ':80', ':443', ':0080', ':8080',
                          ':0', ':65535', ':65536', ':-1', ':8o', ':80:80'])
_PATHS = st.sampled_from(['', '/', '/hook', '\\hook', '/a\\b', '/@x',
                          '/%2e%2e/x', '/#', '#', '#frag', '?q=1', '?',
                          '/\\169.254.169.254/', '/é'])


_LABELS = st.from_regex(r'\A[a-zA-Z0-9]([a-zA-Z0-9-]{0,8}[a-zA-Z0-9])?\Z')


@st.composite
def _names(draw):
    """A DNS name, often with one tricky piece inserted somewhere: most
    of the URLs that matter are near-valid ones."""
    labels = draw(st.lists(_LABELS, min_size=1, max_size=4))
    name = '.'.join(labels)
    if draw(st.booleans()):
        at = draw(st.integers(0, len(name)))
        name = name[:at] + draw(_HOST_PIECES) + name[at:]
    return name


@st.composite
def urls(draw):
    """A URL made of pieces parsers disagree on."""
    scheme = draw(st.sampled_from(['http', 'https', 'HTTP', 'hTtPs']))
    host = draw(st.one_of(
        _names(),
        st.lists(_HOST_PIECES, min_size=1, max_size=6).map(''.join)))
    return '%s://%s%s%s' % (scheme, host, draw(_PORTS), draw(_PATHS))


def connection_of(url):
    """``(host, port)`` that ``requests`` connects to for ``url``."""
    prepared = requests.Request('POST', url).prepare()
    params, pool_kwargs = _ADAPTER.build_connection_pool_key_attributes(
        prepared, True)
    pool = _ADAPTER.poolmanager.connection_from_host(
        **params, pool_kwargs=pool_kwargs)
    return pool.host, pool.port


def _port(target):
    """The port the guard's canonical URL names, or the default one."""
    scheme, rest = target.url.split('://', 1)
    authority = rest.split('/', 1)[0]
    if authority.endswith(']') or ':' not in authority:
        return {'http': 80, 'https': 443}[scheme]
    return int(authority.rsplit(':', 1)[1])


def _same_host(connected, target):
    if target.address is not None:
        try:
            return ipaddress.ip_address(connected) == target.address
        except ValueError:
            return False
    return connected == target.host


@hypothesis.settings(max_examples=600, deadline=None, derandomize=True)
@hypothesis.given(urls())
def test_the_guard_judges_the_host_requests_connects_to(url):
    try:
        target = targets.parse(url)
    except targets.RefusedUrl:
        return
    host, port = connection_of(target.url)
    assert _same_host(host, target), (url, target, host)
    assert port == _port(target), (url, target, port)
    # The URL as the caller wrote it goes to the same host (one trailing
    # dot aside, which the canonical URL drops).
    original, original_port = connection_of(url)
    assert _same_host(original.lower().removesuffix('.'), target), (
        url, target, original)
    assert original_port == port
    # Canonical means stable.
    assert targets.canonical(target.url) == target.url


@pytest.mark.parametrize('url, host', [
    ('http://169.254.169.254\\.example.com/latest/meta-data/',
     '169.254.169.254'),
    ('http://evil.example.net\\@hooks.example.com/', 'evil.example.net'),
    ('http://ex%2eample.com/', 'ex.ample.com'),
])
def test_known_splits_are_judged_on_the_connection_host(url, host):
    assert targets.parse(url).host == host
    assert connection_of(url)[0] == host
