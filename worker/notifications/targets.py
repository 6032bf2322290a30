"""Which URLs may receive notifications: ``[notifications] allowed_hosts``.

A callback URL comes from a client, so it is a way into the operator's
network: only the hosts and networks the operator lists may be named.
A host name in a URL matches a listed name (``.example.com`` matches the
hosts under it); an IP address in a URL must fall in a listed address
or network. A name is not resolved to be matched against networks: what
it resolves to may change between the check and the request.
"""

import dataclasses
import ipaddress
import re
import urllib.parse

_SCHEMES = ('http', 'https')
# A DNS name: labels of letters, digits and hyphens.
_LABEL = r'(?!-)[a-z0-9-]{1,63}(?<!-)'
_HOST_NAME = re.compile(r'^%s(\.%s)*$' % (_LABEL, _LABEL))
#: The longest URL accepted (the common limit of browsers and servers).
MAX_URL_LENGTH = 2048


class RefusedUrl(ValueError):
    """A callback URL that may not be used; the message says why."""


def parse(url):
    """Return ``url``'s parts; raise ``RefusedUrl`` if it is no http(s) URL
    with a host."""
    if not isinstance(url, str) or not url:
        raise RefusedUrl('a callback URL must be a non-empty string')
    if len(url) > MAX_URL_LENGTH:
        raise RefusedUrl('callback URL longer than %d characters'
                         % MAX_URL_LENGTH)
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port
    except ValueError as exc:
        raise RefusedUrl('%r is not a URL: %s' % (url, exc)) from None
    if parts.scheme not in _SCHEMES:
        raise RefusedUrl('%r: only http and https URLs are accepted' % url)
    if not parts.hostname:
        raise RefusedUrl('%r names no host' % url)
    if parts.username is not None or parts.password is not None:
        raise RefusedUrl('%r carries credentials; sign with [notifications] '
                         'secret instead' % url)
    if parts.fragment:
        raise RefusedUrl('%r has a fragment, which is never sent' % url)
    return parts


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
            if not _HOST_NAME.match(name):
                raise ValueError(
                    '[notifications] allowed_hosts: %r is neither a host '
                    'name, an IP address nor a CIDR network' % entry)
            if text.startswith('.'):
                domains.append(text)
            else:
                names.add(name)
        return cls(frozenset(names), tuple(domains), tuple(networks))

    def allows(self, host):
        """True if a URL may name ``host``."""
        host = host.lower().rstrip('.')
        address = _address(host)
        if address is not None:
            return any(address in network for network in self.networks)
        return host in self.names or any(host.endswith(domain)
                                         for domain in self.domains)

    def check(self, url):
        """Return ``url`` if it may receive notifications.

        :raises RefusedUrl: saying why not.
        """
        parts = parse(url)
        if not self.allows(parts.hostname):
            raise RefusedUrl(
                'callback URL %r refused: host %s is not in [notifications] '
                'allowed_hosts' % (url, parts.hostname))
        return url
