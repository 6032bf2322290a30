"""A real HTTP receiver of notifications (127.0.0.1 by default), for tests.

It checks each request's signatures (the deprecated
``X-Barbican-Retry-Signature``, and with ``webhook_secret`` the Standard
Webhooks ones with the ``standardwebhooks`` library, as a receiver
would), records the events it acknowledges in the order they arrive, and
can be down (its port closed), or answer each event's first requests
badly: slowly, with a 500 or a 404, or by closing the connection.
"""

import collections
import http.server
import json
import socket
import threading
import time

import standardwebhooks

from tests.functional import processes
from worker.notifications import sender

#: How a receiver answers: OK (204), or one of the faults.
OK, FAIL_500, FAIL_404, SLOW, CLOSE = 'ok', '500', '404', 'slow', 'close'


class _Server(http.server.ThreadingHTTPServer):
    """Listens with room for a burst of connections: socketserver's
    backlog of 5 resets the rest, as no real receiver does."""

    request_queue_size = 256


class Receiver:
    """One receiver; ``url`` is its address, fixed across restarts.

    :param fault: how it answers the first ``fault_times`` requests of
        each event (OK: every request is acknowledged).
    :param slow_seconds: how long a SLOW answer takes.
    :param webhook_secret: the Standard Webhooks secret it verifies each
        request with (a ``whsec_…`` string, or the bytes of a key); may
        be changed while it runs. None: it keeps the requests without
        verifying them.
    """

    def __init__(self, secret, fault=OK, fault_times=1, slow_seconds=3.0,
                 webhook_secret=None, host='127.0.0.1'):
        self.secret = secret
        self.webhook_secret = webhook_secret
        #: Requests the library refused under ``webhook_secret``.
        self.unverified = 0
        #: With ``webhook_secret``: ``(body, headers, time.time())`` of
        #: every request, as it came.
        self.captured = []
        self.fault = fault
        self.fault_times = fault_times
        self.slow_seconds = slow_seconds
        #: Events acknowledged, in arrival order (duplicates included).
        self.events = []
        self.bad_signatures = 0
        self.requests = collections.Counter()
        #: ``time.monotonic()`` of the last acknowledged request, and
        #: ``{order_id: time}`` of the first of each order.
        self.last_at = None
        self.first_at = {}
        self._lock = threading.Lock()
        # Outside the ephemeral range: it is bound again after an outage.
        self.port = processes.free_port()
        #: The address it listens on: 127.0.0.1, or the test runner's
        #: address on the bridge of cluster.sh --network, which the
        #: processes in the namespaces reach.
        self.host = host
        self.url = 'http://%s:%d/hook' % (host, self.port)
        self._server = None

    def start(self):
        """Listen (again) on the receiver's port."""
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                receiver._handle(self)

            def log_message(self, *args):
                pass

        self._server = _Server((self.host, self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever,
                         daemon=True).start()
        return self

    def stop(self):
        """Close the port: requests are refused until ``start``."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _handle(self, request):
        body = request.rfile.read(int(request.headers['Content-Length']))
        event = json.loads(body)
        with self._lock:
            self.requests[event['event_id']] += 1
            attempt = self.requests[event['event_id']]
            # A URL's own secret (whsec_ text) is the only key of its
            # requests: the deprecated header, under the shared secret,
            # is not sent to it.
            legacy = (None if isinstance(self.webhook_secret, str)
                      else sender.signature(self.secret, body))
            if request.headers.get(sender.SIGNATURE_HEADER) != legacy:
                self.bad_signatures += 1
            if self.webhook_secret is not None:
                self._verify(body, dict(request.headers))
        fault = self.fault if attempt <= self.fault_times else OK
        if fault == CLOSE:
            request.close_connection = True
            request.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault == SLOW:
            time.sleep(self.slow_seconds)
        if fault in (FAIL_500, FAIL_404):
            request.send_response(int(fault))
            request.send_header('Content-Length', '5')
            request.end_headers()
            request.wfile.write(b'nope\n')
            return
        with self._lock:
            self.events.append(event)
            self.last_at = time.monotonic()
            self.first_at.setdefault(event['order_id'], self.last_at)
        request.send_response(204)
        request.end_headers()

    def _verify(self, body, headers):
        """Verify a request as a receiver would; keep it (under the lock).
        """
        self.captured.append((body, headers, time.time()))
        try:
            standardwebhooks.Webhook(self.webhook_secret).verify(body,
                                                                 headers)
        except standardwebhooks.WebhookVerificationError:
            self.unverified += 1

    def first_seen(self):
        """``{order_id: [sequence, ...]}`` of the events acknowledged,
        duplicates (by ``event_id``) dropped, in arrival order."""
        seen, found = set(), collections.defaultdict(list)
        with self._lock:
            events = list(self.events)
        for event in events:
            if event['event_id'] not in seen:
                seen.add(event['event_id'])
                found[event['order_id']].append(event['sequence'])
        return found

    def count(self):
        """How many distinct events were acknowledged."""
        with self._lock:
            return len({event['event_id'] for event in self.events})
