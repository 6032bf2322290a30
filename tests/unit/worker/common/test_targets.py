"""Which callback URLs are accepted: ``[notifications] allowed_hosts``."""

import pytest

from tests import config
from worker.common import targets
from worker import conf as worker_conf
from worker.notifications import subscriptions

ALLOWED = targets.AllowedHosts.parse(
    ['hooks.example.org', '.partner.example', '192.0.2.10',
     '198.51.100.0/24', '2001:db8::/32'])


@pytest.mark.parametrize('url', [
    'https://hooks.example.org/orders',
    'http://hooks.example.org:8080/x?y=1',
    'https://a.partner.example/hook',
    'https://deep.a.partner.example/hook',
    'http://192.0.2.10/hook',
    'http://198.51.100.77:9000/hook',
    'https://[2001:db8::1]/hook',
])
def test_allowed_urls(url):
    assert ALLOWED.check(url) == url


@pytest.mark.parametrize('url, why', [
    ('https://evil.example.org/', 'host evil.example.org is not in'),
    ('https://partner.example.evil/', 'is not in'),
    ('https://xpartner.example/', 'is not in'),
    # A name is never matched against networks: what it resolves to may
    # change after the check.
    ('http://localhost/', 'host localhost is not in'),
    ('http://127.0.0.1/', 'host 127.0.0.1 is not in'),
    ('http://192.0.2.11/', 'is not in'),
    ('ftp://hooks.example.org/', 'only http and https'),
    ('https:///path', 'names no host'),
    ('https://user:pw@hooks.example.org/', 'carries credentials'),
    ('https://hooks.example.org/#x', 'has a fragment'),
    ('https://hooks.example.org:99999/', 'is not a URL'),
    ('https://hooks.example.org/' + 'x' * 2048, 'longer than 2048'),
    ('', 'non-empty string'),
])
def test_refused_urls_say_why(url, why):
    with pytest.raises(targets.RefusedUrl, match=why):
        ALLOWED.check(url)


@pytest.mark.parametrize('url, canonical', [
    ('HTTPS://Hooks.Example.ORG./orders', 'https://hooks.example.org/orders'),
    ('https://hooks.example.org:443/orders#',
     'https://hooks.example.org/orders'),
    ('http://hooks.example.org:80', 'http://hooks.example.org/'),
    ('http://hooks.example.org:0080/a?b', 'http://hooks.example.org/a?b'),
    ('http://[2001:DB8:0::1]:80/', 'http://[2001:db8::1]/'),
])
def test_urls_are_canonical_so_one_receiver_has_one_key(url, canonical):
    assert ALLOWED.check(url) == canonical


@pytest.mark.parametrize('url, why', [
    # urllib.parse sees host 169.254.169.254\.partner.example; requests
    # (urllib3) connects to 169.254.169.254.
    ('http://169.254.169.254\\.partner.example/latest/meta-data/',
     'host 169.254.169.254 is not in'),
    ('http://evil.example.net\\@a.partner.example/',
     'host evil.example.net is not in'),
    ('http://@a.partner.example/', 'carries credentials'),
    # Names the resolver reads as addresses.
    ('http://127.1/', 'neither a DNS name nor an IP address'),
    ('http://0x7f.0.0.1/', 'neither a DNS name nor an IP address'),
    ('http://2130706433/', 'neither a DNS name nor an IP address'),
    ('http://a_b.partner.example/', 'neither a DNS name nor an IP address'),
    ('http://[fe80::1%25eth0]/', 'zone id'),
    ('http://a.partner.example/\n', 'control character'),
])
def test_the_host_judged_is_the_one_connected_to(url, why):
    with pytest.raises(targets.RefusedUrl, match=why):
        ALLOWED.check(url)


def test_nothing_is_allowed_by_default():
    conf = config.make_conf()
    with pytest.raises(targets.RefusedUrl, match='allowed_hosts'):
        subscriptions.urls_for_order(conf, ['https://hooks.example.org/'])
    assert subscriptions.urls_for_order(conf) == []


def test_an_order_gets_its_callback_url_and_the_endpoints_once_each():
    conf = config.make_conf(**{
        'notifications.allowed_hosts': ['hooks.example.org'],
        'notifications.endpoints': ['https://audit.example.com/',
                                    'https://hooks.example.org/a'],
        'notifications.secret': 's'})
    assert subscriptions.urls_for_order(
        conf, ['https://hooks.example.org/a']) == [
        'https://hooks.example.org/a', 'https://audit.example.com/']


@pytest.mark.parametrize('overrides, option', [
    ({'notifications.allowed_hosts': ['not a host!']}, 'allowed_hosts'),
    ({'notifications.endpoints': ['ftp://x.example/'],
      'notifications.secret': 's'}, 'endpoints'),
    ({'notifications.allowed_hosts': ['hooks.example.org']}, 'secret'),
])
def test_bad_notification_options_are_refused_naming_the_option(
        overrides, option):
    conf = config.make_conf(**overrides)
    with pytest.raises(ValueError, match=r'\[notifications\] %s' % option):
        worker_conf.validate(conf)
