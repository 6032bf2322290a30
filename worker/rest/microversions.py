"""API microversions: ``OpenStack-API-Version: retry X.Y``.

A request names the version it speaks (none: the minimum); a response
says the version it was answered in, and ``Vary`` on the header, so that
later changes can be negotiated as placement's and nova's are.
"""

import microversion_parse

from worker.rest import errors

SERVICE_TYPE = 'retry'
HEADER = 'OpenStack-API-Version'
#: The versions this server speaks: (major, minor), min and max.
MIN_VERSION = (1, 0)
MAX_VERSION = (1, 0)


def text(version):
    """``(1, 0)`` as ``'1.0'``."""
    return '%d.%d' % version


def negotiate(headers):
    """The version a request asks for, as ``(major, minor)``.

    :raises errors.APIError: 406 for a version this server does not
        speak, or one that is not ``X.Y`` / ``latest``.
    """
    asked = microversion_parse.get_version(headers,
                                           service_type=SERVICE_TYPE)
    if asked is None:
        return MIN_VERSION
    if asked.strip().lower() == 'latest':
        return MAX_VERSION
    try:
        major, minor = (int(part) for part in asked.strip().split('.'))
    except ValueError:
        raise _unacceptable(asked) from None
    version = (major, minor)
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise _unacceptable(asked)
    return version


def _unacceptable(asked):
    return errors.APIError(
        406, 'retry.unsupported_version',
        'API version %r is not supported: this server speaks %s %s to %s'
        % (asked[:40], SERVICE_TYPE, text(MIN_VERSION), text(MAX_VERSION)))


def headers(version):
    """The response headers of a request answered in ``version``."""
    return {HEADER: '%s %s' % (SERVICE_TYPE, text(version)),
            'Vary': HEADER}
