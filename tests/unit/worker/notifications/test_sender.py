"""One signed POST to a real HTTP server on 127.0.0.1."""

import datetime
import hashlib
import hmac
import http.server
import threading
import time
import tracemalloc
import zlib

import pytest
import standardwebhooks

from tests import config
from worker.notifications import sender as sender_module

SECRET = 'shared-secret'
EVENT = {'event_id': 'e1', 'order_id': 'o1', 'sequence': 1,
         'time': '2026-11-25T12:00:00.000000Z', 'status': 'PENDING',
         'event': 'order.created'}


class Server:
    """Answers every POST with ``answer(handler)``; records requests."""

    def __init__(self, answer):
        self.requests = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers['Content-Length']))
                server.requests.append((self.path, dict(self.headers),
                                        body))
                answer(self)

            do_GET = do_POST

            def log_message(self, *args):
                pass

        self.http = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                    Handler)
        self.http.daemon_threads = True
        self.url = 'http://127.0.0.1:%d/hook' % self.http.server_port
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self):
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def serve():
    servers = []

    def serve(answer):
        servers.append(Server(answer))
        return servers[-1]
    yield serve
    for server in servers:
        server.close()


def _sender(wall_clock=time.time, **overrides):
    options = {'notifications.allowed_hosts': ['127.0.0.1'],
               'notifications.secret': SECRET,
               'notifications.timeout_seconds': 0.5}
    options.update(overrides)
    return sender_module.Sender(config.make_conf(**options), wall_clock)


def _status(code, body=b'', headers=()):
    def answer(handler):
        handler.send_response(code)
        for name, value in headers:
            handler.send_header(name, value)
        handler.send_header('Content-Length', str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
    return answer


def test_a_2xx_acknowledges_and_the_body_is_signed(serve):
    server = serve(_status(204))
    # A URL without a secret of its own: the shared secret signs.
    assert _sender().send(server.url, EVENT, [SECRET.encode()]) is None
    [(path, headers, body)] = server.requests
    assert path == '/hook'
    assert headers['Content-Type'] == 'application/json'
    assert headers['X-Barbican-Retry-Event-Id'] == 'e1'
    # What a receiver computes with its copy of the secret.
    expected = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert headers['X-Barbican-Retry-Signature'] == 'sha256=' + expected
    assert body == (b'{"event":"order.created","event_id":"e1",'
                    b'"order_id":"o1","sequence":1,"status":"PENDING",'
                    b'"time":"2026-11-25T12:00:00.000000Z"}')


def test_standard_webhooks_headers_under_the_keys_given(serve):
    server = serve(_status(204))
    key = 'whsec_' + 'A' * 43 + '='
    assert _sender(wall_clock=lambda: 1764158400.7).send(
        server.url, EVENT, [key]) is None
    [(_, headers, body)] = server.requests
    assert (headers['webhook-id'], headers['webhook-timestamp']) == (
        'e1', '1764158400')
    # The library verifies the request as it came, at its timestamp.
    verifier = standardwebhooks.Webhook(key)
    expected = verifier.sign('e1', _at(1764158400), body.decode())
    assert headers['webhook-signature'] == expected
    with pytest.raises(standardwebhooks.WebhookVerificationError,
                       match='too old'):
        verifier.verify(body, headers)


def _at(seconds):
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)


def test_any_other_status_fails_with_a_bounded_body(serve):
    server = serve(_status(500, b'x' * 100000))
    failure = _sender(**{'notifications.max_response_bytes': 300}).send(
        server.url, EVENT)
    assert failure == 'HTTP 500: ' + 'x' * 200


def test_a_redirect_is_not_followed(serve):
    target = serve(_status(204))
    server = serve(_status(302, headers=[('Location', target.url)]))
    failure = _sender().send(server.url, EVENT)
    assert failure == 'HTTP 302 redirect to %s, not followed' % target.url
    assert target.requests == []


def test_a_slow_receiver_times_out(serve):
    gave_up = threading.Event()

    def slow(handler):
        # It answers once the sender gave up: one that waited for the
        # answer instead would get it, however busy the machine.
        gave_up.wait(30)
        _status(204)(handler)
    server = serve(slow)
    started = time.monotonic()
    assert _sender().send(server.url, EVENT) == 'no answer within 0.5s'
    gave_up.set()
    # Near its timeout, not near the receiver's 30 s.
    assert time.monotonic() - started < 10


def test_a_refused_connection_fails_in_one_short_line(serve):
    server = serve(_status(204))
    server.close()
    assert _sender().send(server.url, EVENT) == \
        'request failed: Connection refused'


def test_a_url_no_longer_allowed_is_not_requested(serve):
    server = serve(_status(204))
    failure = _sender(**{'notifications.allowed_hosts': ['10.0.0.0/8']}
                      ).send(server.url, EVENT)
    assert 'not in [notifications] allowed_hosts' in failure
    assert server.requests == []


def test_an_endpoint_stored_as_given_before_urls_were_canonical_is_sent_to(
        serve):
    # A row of the release before holds the URL as the operator wrote it
    # (no trailing slash); [notifications] endpoints are compared
    # canonical, so that row is still the operator's endpoint, whatever
    # allowed_hosts says.
    server = serve(_status(204))
    stored = server.url[:-len('/hook')]
    assert _sender(**{'notifications.allowed_hosts': [],
                      'notifications.endpoints': [stored]}
                   ).send(stored, EVENT) is None
    [(path, _, _)] = server.requests
    assert path == '/'


def test_a_url_with_its_own_secret_gets_no_header_under_the_shared_one(
        serve):
    # The deprecated header under [notifications] secret would let any
    # holder of that secret forge requests to this URL's receiver.
    server = serve(_status(204))
    key = 'whsec_' + 'A' * 43 + '='
    assert _sender().send(server.url, EVENT, [key, SECRET.encode()]) is None
    [(_, headers, body)] = server.requests
    assert 'X-Barbican-Retry-Signature' not in headers
    assert headers['webhook-signature'].count('v1,') == 2


#: 256 MiB of zeros, gzipped: about 250 KiB on the wire.
_BOMB_BYTES = 256 * 1024 * 1024


@pytest.fixture(scope='module')
def bomb():
    zeros = bytes(1024 * 1024)
    # wbits 31: a gzip member, as Content-Encoding: gzip carries.
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunks = [packer.compress(zeros)
              for _ in range(_BOMB_BYTES // len(zeros))]
    return b''.join(chunks) + packer.flush()


def test_a_gzip_bomb_reply_is_read_bounded_and_never_inflated(serve, bomb):
    def answer(handler):
        handler.send_response(500)
        # Compressed whatever the request asked for.
        handler.send_header('Content-Encoding', 'gzip')
        handler.send_header('Content-Length', str(len(bomb)))
        handler.end_headers()
        try:
            handler.wfile.write(bomb)
        except OSError:
            pass  # the sender stopped reading, as it should
    server = serve(answer)
    tracemalloc.start()
    try:
        failure = _sender(**{'notifications.max_response_bytes': 4096}
                          ).send(server.url, EVENT, [SECRET.encode()])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert failure == 'HTTP 500: (a gzip-encoded body, not decoded)'
    [(_, headers, _)] = server.requests
    assert headers['Accept-Encoding'] == 'identity'
    # Inflating it would take 256 MiB; reading 4 KiB of it takes little.
    assert peak < 16 * 1024 * 1024
