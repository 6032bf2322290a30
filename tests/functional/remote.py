"""A fake remote service on 127.0.0.1 that counts concurrent calls per key.

The test order type ``remote_call`` (``tests/plugin.py: RemoteCall``)
calls it once per step run: ``GET /?key=K&order=O&hold=S`` answers after
S seconds (held longer while the test holds its key). The service
records, per key, how many calls were in flight at once at most, and when
each call came in, as a remote side that enforces a limit per key would
see them.
"""

import collections
import http.server
import threading
import time
import urllib.parse

from tests.functional import processes


class _Server(http.server.ThreadingHTTPServer):
    """Room for a burst of connections (socketserver's backlog is 5)."""

    request_queue_size = 256
    daemon_threads = True


class RemoteService:
    """The service; ``url`` is its address. A context manager that
    listens while it is open."""

    def __init__(self):
        self.port = processes.free_port()
        self.url = 'http://127.0.0.1:%d/' % self.port
        self._lock = threading.Lock()
        self._in_flight = collections.Counter()
        #: ``{key: most calls in flight at once}``.
        self.most = collections.Counter()
        #: ``{key: [(time.time() of each call's arrival, order), ...]}``.
        self.calls = collections.defaultdict(list)
        #: ``{key: time.time() of the end of its last call}``.
        self.last_end = {}
        #: ``{key: Event}``: the calls of a key held until it is set.
        self._gates = {}
        self._server = None

    def hold(self, key):
        """Hold every call of ``key`` until ``release(key)`` (or 60 s)."""
        self._gates[key] = threading.Event()

    def release(self, key):
        """Let the calls of ``key`` held, and the next ones, through."""
        self._gates.pop(key).set()

    def in_flight(self, key):
        """How many calls of ``key`` are in flight now."""
        with self._lock:
            return self._in_flight[key]

    def __enter__(self):
        service = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                query = urllib.parse.parse_qs(
                    urllib.parse.urlsplit(self.path).query)
                service._call(query['key'][0], query['order'][0],
                              float(query['hold'][0]))
                self.send_response(200)
                self.send_header('Content-Length', '0')
                self.end_headers()

            def log_message(self, *args):
                pass

        self._server = _Server(('127.0.0.1', self.port), Handler)
        threading.Thread(target=self._server.serve_forever,
                         daemon=True).start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()

    def _call(self, key, order, hold):
        with self._lock:
            self._in_flight[key] += 1
            self.most[key] = max(self.most[key], self._in_flight[key])
            self.calls[key].append((time.time(), order))
            gate = self._gates.get(key)
        if gate is not None:
            gate.wait(60)
        time.sleep(hold)
        with self._lock:
            self._in_flight[key] -= 1
            self.last_end[key] = time.time()
