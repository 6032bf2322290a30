"""One signed HTTP POST of one event, with ``requests``.

The body is the event's JSON, signed as Standard Webhooks defines it
(``signing``: ``webhook-id``, ``webhook-timestamp``,
``webhook-signature``) under the keys of its URL. Deprecated, kept for
one release: ``X-Barbican-Retry-Event-Id``, the same value as
``webhook-id``, and ``X-Barbican-Retry-Signature``, ``sha256=`` and the
hex HMAC-SHA256 of the body under ``[notifications] secret``, sent only
to a URL that secret signs (one without a secret of its own): a URL's
own secret must be the only key that can sign what its receiver
trusts. A 2xx answer acknowledges the event; anything else (another
status, a redirect, which is never followed, a timeout, a refused or
dropped connection) is a failure whose description is returned. At most
``max_response_bytes`` of a body are read, never decoded: the request
asks for ``Accept-Encoding: identity`` and a reply compressed anyway is
read as it came (urllib3's inflating reads are where its
decompression-bomb advisories lie).
"""

import functools
import hashlib
import hmac
import json
import threading
import time

from oslo_log import log as logging
import requests

from worker.common import targets
from worker.notifications import signing
from worker.notifications import subscriptions
from worker import tracing

LOG = logging.getLogger(__name__)

#: Deprecated (the Standard Webhooks headers replace them): removed in
#: the release after the one that added those.
SIGNATURE_HEADER = 'X-Barbican-Retry-Signature'
EVENT_ID_HEADER = 'X-Barbican-Retry-Event-Id'
USER_AGENT = 'barbican-retry-notifications/1'
#: Characters of a response body kept in a failure's description.
_ERROR_BODY_CHARS = 200


def body_of(payload):
    """The bytes sent for a payload: compact JSON, keys sorted."""
    return json.dumps(payload, sort_keys=True,
                      separators=(',', ':')).encode('utf-8')


def signature(key, body):
    """The ``X-Barbican-Retry-Signature`` value of ``body`` under ``key``
    (bytes, or text as its UTF-8 bytes; deprecated)."""
    if isinstance(key, str):
        key = key.encode('utf-8')
    return 'sha256=' + hmac.new(key, body, hashlib.sha256).hexdigest()


def headers(keys, event_id, timestamp, body):
    """Every header of one request but the tracing ones.

    :param keys: the Standard Webhooks keys (``signing.keys``), newest
        first. The deprecated ``X-Barbican-Retry-Signature`` is signed
        with the first, only when it is ``[notifications] secret`` (bytes:
        ``signing.keys`` gives a URL's own secrets as ``whsec_`` text).
    :param timestamp: seconds since the epoch, as sent.
    """
    found = {
        'Content-Type': 'application/json',
        'User-Agent': USER_AGENT,
        # The reply is never decoded (a decompression bomb costs us
        # nothing): ask for it as it is.
        'Accept-Encoding': 'identity',
        EVENT_ID_HEADER: event_id,
    }
    if keys and isinstance(keys[0], bytes):
        found[SIGNATURE_HEADER] = signature(keys[0], body)
    found.update(signing.headers(keys, event_id, timestamp, body))
    return found


class Sender:
    """Posts events; one ``requests.Session`` per thread (its pool).

    :param conf: the configuration, read at each request (the options are
        mutable).
    :param wall_clock: seconds since the epoch, for ``webhook-timestamp``:
        this host's clock, which the receiver compares with its own.
    """

    def __init__(self, conf, wall_clock=time.time):
        self._conf = conf
        self._wall_clock = wall_clock
        self._local = threading.local()

    def _session(self):
        session = getattr(self._local, 'session', None)
        if session is None:
            session = requests.Session()
            # NOTE: no proxy, .netrc or CA bundle from the environment: the
            # host a request reaches is the one allowed_hosts checked.
            session.trust_env = False
            self._local.session = session
        return session

    def check(self, url):
        """Raise ``targets.RefusedUrl`` if ``url`` may no longer be sent to
        (the operator narrowed ``allowed_hosts`` since it was accepted).

        ``url`` is compared canonical with ``endpoints``: a row written
        before URLs were kept canonical (or one migration 0011 could not
        canonicalise) holds the text as it was given.
        """
        group = self._conf.notifications
        if not subscriptions.is_endpoint(group.endpoints, url):
            _allowed_hosts(tuple(group.allowed_hosts)).check(url)

    def send(self, url, payload, keys=()):
        """POST ``payload`` to ``url``, signed under ``keys``
        (``signing.keys``); None if acknowledged, else what went wrong
        (one line)."""
        group = self._conf.notifications
        try:
            self.check(url)
        except targets.RefusedUrl as exc:
            return str(exc)
        body = body_of(payload)
        sent_headers = headers(keys, payload['event_id'],
                               int(self._wall_clock()), body)
        tracing.inject(sent_headers)
        verify = group.ca_file or group.verify_tls
        timeout = group.timeout_seconds
        try:
            with self._session().post(
                    url, data=body, headers=sent_headers, timeout=timeout,
                    allow_redirects=False, stream=True,
                    verify=verify) as response:
                # Bounded, and as sent: a receiver cannot make us read,
                # or inflate, more.
                text = response.raw.read(group.max_response_bytes,
                                         decode_content=False)
        except requests.Timeout:
            return 'no answer within %gs' % timeout
        except requests.RequestException as exc:
            return 'request failed: %s' % _reason(exc)
        if 200 <= response.status_code < 300:
            return None
        if response.is_redirect:
            return 'HTTP %d redirect to %s, not followed' % (
                response.status_code, response.headers.get('Location'))
        return 'HTTP %d: %s' % (response.status_code, _body_text(
            response, text))


def _body_text(response, body):
    """The start of a failed reply's body, for its description; a body
    the receiver encoded anyway (gzip…) is named, never inflated."""
    encoding = response.headers.get('Content-Encoding', 'identity')
    if encoding.strip().lower() not in ('', 'identity'):
        return '(a %s-encoded body, not decoded)' % _one_line(encoding)[:40]
    return _one_line(body[:_ERROR_BODY_CHARS].decode('utf-8', 'replace'))


@functools.lru_cache(maxsize=4)
def _allowed_hosts(entries):
    """``allowed_hosts`` parsed once per value, not at every request (the
    option is read each time: it may change on SIGHUP)."""
    return targets.AllowedHosts.parse(entries)


def _reason(exc):
    """The root cause of a failed request, short (``Connection refused``),
    rather than the whole chain urllib3 wraps it in."""
    deepest, seen = exc, set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.strerror:
            return exc.strerror
        deepest = exc
        nested = [arg for arg in exc.args if isinstance(arg, BaseException)]
        reason = getattr(exc, 'reason', None)
        if not nested and isinstance(reason, BaseException):
            nested = [reason]
        exc = nested[0] if nested else exc.__cause__ or exc.__context__
    return _one_line(deepest)


def _one_line(value):
    return ' '.join(str(value).split())[:500]
