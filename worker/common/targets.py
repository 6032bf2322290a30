"""Which URLs may receive notifications: ``[notifications] allowed_hosts``.

A callback URL comes from a client, so it is a way into the operator's
network: only the hosts and networks the operator lists may be named.
A host name in a URL matches a listed name (``.example.com`` matches the
hosts under it); an IP address in a URL must fall in a listed address
or network. A name is not resolved to be matched against networks: what
it resolves to may change between the check and the request.

The host judged is the one the HTTP client connects to: a URL is parsed
by urllib3's own parser, which ``requests`` sends with (``urllib.parse``
splits some URLs elsewhere: ``http://10.0.0.1\\.example.com/`` names
``10.0.0.1`` to urllib3). A host that is neither a DNS name nor an IP
literal (``127.1``, ``0x7f.1``, a zone id, a character a name cannot
have) is refused, as the resolver may read it as an address. A URL
accepted is returned canonical (``canonical``): the same receiver always
has the same text, hence one ``notification_urls`` row and one secret.
"""

import dataclasses
import ipaddress
import re
import socket

from urllib3 import exceptions as urllib3_exceptions
from urllib3.util import url as urllib3_url

_SCHEMES = ('http', 'https')
_DEFAULT_PORTS = {'http': 80, 'https': 443}
# A DNS name: labels of letters, digits and hyphens.
_LABEL = r'(?!-)[a-z0-9-]{1,63}(?<!-)'
_HOST_NAME = re.compile(r'^%s(\.%s)*$' % (_LABEL, _LABEL))
# Spaces and control characters, which no URL sent may hold.
_CONTROL = re.compile(r'[\x00-\x20\x7f]')
# Where urllib3's own URI_RE ends the authority.
_AUTHORITY = re.compile(r'^[a-zA-Z][a-zA-Z0-9+.-]*://([^\\/?#]*)')
#: The longest URL accepted (the common limit of browsers and servers).
MAX_URL_LENGTH = 2048


class RefusedUrl(ValueError):
    """A callback URL that may not be used; the message says why."""


@dataclasses.dataclass(frozen=True)
class Target:
    """A URL as the HTTP client reads it.

    :param url: the canonical URL: scheme and host in lower case, no
        trailing dot, no default port, no empty fragment, ``/`` for an
        empty path.
    :param host: the host connected to: a DNS name, or an IP address in
        its canonical text (IPv6 without brackets).
    :param address: the host as an ``ipaddress`` address, or None for a
        name.
    """

    url: str
    host: str
    address: ipaddress.IPv4Address | ipaddress.IPv6Address | None


def parse(url):
    """Return ``url`` as a ``Target``.

    :raises RefusedUrl: not an http(s) URL naming a DNS name or an IP
        literal, without credentials or a non-empty fragment (an empty
        one is dropped), of at most ``MAX_URL_LENGTH`` characters.
    """
    if not isinstance(url, str) or not url:
        raise RefusedUrl('a callback URL must be a non-empty string')
    if len(url) > MAX_URL_LENGTH:
        raise RefusedUrl('callback URL longer than %d characters'
                         % MAX_URL_LENGTH)
    if _CONTROL.search(url):
        raise RefusedUrl('%r holds a space or a control character' % url)
    try:
        parts = urllib3_url.parse_url(url)
    except urllib3_exceptions.LocationParseError as exc:
        raise RefusedUrl('%r is not a URL: %s' % (url, exc)) from None
    if parts.scheme not in _SCHEMES:
        raise RefusedUrl('%r: only http and https URLs are accepted' % url)
    if not parts.host:
        raise RefusedUrl('%r names no host' % url)
    # NOTE: '@' in the authority at all, even with an empty user: what
    # precedes it is credentials to urllib.parse and to some proxies.
    if parts.auth is not None or '@' in _authority(url):
        raise RefusedUrl('%r carries credentials; sign with [notifications] '
                         'secret instead' % url)
    if parts.fragment:
        raise RefusedUrl('%r has a fragment, which is never sent' % url)
    host, address = _host(url, parts.host)
    port = parts.port
    if port == _DEFAULT_PORTS[parts.scheme]:
        port = None
    elif port == 0:
        raise RefusedUrl('%r: port 0 cannot be connected to' % url)
    shown = '[%s]' % host if address is not None and address.version == 6 \
        else host
    canonical = urllib3_url.Url(parts.scheme, host=shown, port=port,
                                path=parts.path or '/',
                                query=parts.query).url
    if len(canonical) > MAX_URL_LENGTH:
        raise RefusedUrl('callback URL longer than %d characters'
                         % MAX_URL_LENGTH)
    return Target(canonical, host, address)


def _authority(url):
    """The authority of ``url`` where urllib3 splits it (at the first
    ``/``, ``\\``, ``?`` or ``#`` after ``//``)."""
    found = _AUTHORITY.match(url)
    return found.group(1) if found else ''


def canonical(url):
    """The canonical text of ``url`` (``Target.url``).

    :raises RefusedUrl: as ``parse``.
    """
    return parse(url).url


def _host(url, host):
    """``(host, address)`` of urllib3's host text: a DNS name, lower case
    without a trailing dot, and None; or an IP literal's canonical text
    and its address.

    :raises RefusedUrl: neither.
    """
    if host.startswith('['):
        text = host[1:-1]
        if '%' in text:
            raise RefusedUrl('%r: an IPv6 zone id is not accepted' % url)
        try:
            address = ipaddress.IPv6Address(text)
        except ValueError:
            raise RefusedUrl('%r: %s is no IPv6 address' % (url, host)) \
                from None
        return str(address), address
    name = host.lower()
    name = name[:-1] if name.endswith('.') else name
    try:
        address = ipaddress.IPv4Address(name)
    except ValueError:
        pass
    else:
        return str(address), address
    if not _HOST_NAME.match(name) or _numeric(name):
        raise RefusedUrl('%r: host %s is neither a DNS name nor an IP '
                         'address' % (url, host))
    return name, None


def _numeric(name):
    """True if the resolver may read ``name`` as an IPv4 address.

    ``getaddrinfo`` takes what ``inet_aton`` does (``127.1``,
    ``0x7f.0.0.1``, ``2130706433``); and no top-level domain is all
    digits, so such a name is none either.
    """
    try:
        socket.inet_aton(name)
    except OSError:
        return name.rsplit('.', 1)[-1].isdigit()
    return True


def _address(host):
    """``host`` as an IP address, or None if it is a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


@dataclasses.dataclass(frozen=True)
class AllowedHosts:
    """The parsed ``[notifications] allowed_hosts``."""

    names: frozenset = frozenset()
    #: Suffixes (``.example.com``) whose hosts are allowed.
    domains: tuple = ()
    networks: tuple = ()

    @classmethod
    def parse(cls, entries):
        """Parse the option's entries.

        :raises ValueError: naming the option and the bad entry.
        """
        names, domains, networks = set(), [], []
        for entry in entries:
            text = entry.strip().lower()
            try:
                networks.append(ipaddress.ip_network(text, strict=False))
                continue
            except ValueError:
                pass
            name = text[1:] if text.startswith('.') else text
            name = name[:-1] if name.endswith('.') else name
            if not _HOST_NAME.match(name):
                raise ValueError(
                    '[notifications] allowed_hosts: %r is neither a host '
                    'name, an IP address nor a CIDR network' % entry)
            if text.startswith('.'):
                domains.append('.' + name)
            else:
                names.add(name)
        return cls(frozenset(names), tuple(domains), tuple(networks))

    def allows(self, host):
        """True if a URL may name ``host`` (as ``Target.host`` gives it).
        """
        address = _address(host)
        if address is not None:
            return any(address in network for network in self.networks)
        return host in self.names or any(host.endswith(domain)
                                         for domain in self.domains)

    def check(self, url):
        """Return ``url``, canonical, if it may receive notifications.

        :raises RefusedUrl: saying why not.
        """
        target = parse(url)
        if not self.allows(target.host):
            raise RefusedUrl(
                'callback URL %r refused: host %s is not in [notifications] '
                'allowed_hosts' % (url, target.host))
        return target.url
