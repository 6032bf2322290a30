"""The benchmark's receiver of notifications: a process of its own, as
cheap as a real receiver.

A real receiver keeps its connections open (HTTP/1.1), verifies each
request's signature and answers at once; it does not start a thread per
request, as ``tests.functional.receiver`` (which must also play outages
and faults) does. This one is an asyncio server in its own process, so
that its CPU time is measured apart from the benchmark's and reported
per event. It checks each order's events as they arrive: every new event
must be the one after the last of its order (``sequence`` + 1); an event
already seen (at-least-once) is counted as a duplicate; anything else is
out of order.

    python -m tests.benchmarks.receiver PORT SECRET

``GET /stats`` answers the figures as JSON (``Receiver.stats``).
"""

import asyncio
import hmac
import json
import os
import subprocess
import sys
import time
import urllib.request

import psutil

from tests.functional import processes
from worker.notifications import sender

_NO_CONTENT = b'HTTP/1.1 204 No Content\r\n\r\n'
_FORBIDDEN = (b'HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n')


class _Tally:
    """The events acknowledged, checked order per order."""

    def __init__(self, secret):
        self.secret = secret
        #: ``{order_id: last sequence acknowledged in order}``.
        self.last = {}
        self.events = self.duplicates = self.out_of_order = 0
        self.bad_signatures = 0
        self.requests = 0
        self.first_at = self.last_at = None

    def take(self, headers, body):
        """Check and count one request; True if it is acknowledged."""
        self.requests += 1
        signature = headers.get(sender.SIGNATURE_HEADER.lower(), '')
        if not hmac.compare_digest(signature,
                                   sender.signature(self.secret, body)):
            self.bad_signatures += 1
            return False
        event = json.loads(body)
        order, sequence = event['order_id'], event['sequence']
        last = self.last.get(order, 0)
        if sequence <= last:
            self.duplicates += 1
        elif sequence == last + 1:
            self.last[order] = sequence
            self.events += 1
        else:
            self.out_of_order += 1
        self.last_at = time.monotonic()
        if self.first_at is None:
            self.first_at = self.last_at
        return True

    def stats(self):
        """The figures, as ``GET /stats`` answers them."""
        return {'events': self.events, 'duplicates': self.duplicates,
                'out_of_order': self.out_of_order,
                'bad_signatures': self.bad_signatures,
                'requests': self.requests, 'orders': len(self.last),
                'events_per_order': _histogram(self.last.values()),
                'first_at': self.first_at, 'last_at': self.last_at}


def _histogram(values):
    found = {}
    for value in values:
        found[str(value)] = found.get(str(value), 0) + 1
    return found


class _Connection(asyncio.Protocol):
    """One kept-alive connection: requests parsed as they come."""

    def __init__(self, tally):
        self._tally = tally
        self._buffer = b''
        self._transport = None

    def connection_made(self, transport):
        self._transport = transport

    def data_received(self, data):
        self._buffer += data
        while True:
            end = self._buffer.find(b'\r\n\r\n')
            if end < 0:
                return
            head = self._buffer[:end].decode('latin-1').split('\r\n')
            headers = dict(_header(line) for line in head[1:])
            length = int(headers.get('content-length', 0))
            if len(self._buffer) < end + 4 + length:
                return
            body = self._buffer[end + 4:end + 4 + length]
            self._buffer = self._buffer[end + 4 + length:]
            self._transport.write(self._answer(head[0], headers, body))

    def _answer(self, request_line, headers, body):
        if request_line.startswith('GET /stats'):
            text = json.dumps(self._tally.stats()).encode()
            return (b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n'
                    b'Content-Length: %d\r\n\r\n' % len(text)) + text
        if self._tally.take(headers, body):
            return _NO_CONTENT
        return _FORBIDDEN


def _header(line):
    name, _, value = line.partition(':')
    return name.strip().lower(), value.strip()


async def _serve(port, secret):
    loop = asyncio.get_running_loop()
    tally = _Tally(secret)
    server = await loop.create_server(lambda: _Connection(tally),
                                      '127.0.0.1', port, backlog=256)
    sys.stdout.write('listening\n')
    sys.stdout.flush()
    async with server:
        await server.serve_forever()


class Receiver:
    """The receiver process, started and stopped by the benchmark.

    :param secret: ``[notifications] secret`` of the workers.
    """

    def __init__(self, secret):
        self.port = processes.free_port()
        self.url = 'http://127.0.0.1:%d/hook' % self.port
        self._secret = secret
        self._process = None
        self._cpu_at = None

    def start(self):
        """Start it; returns once it listens."""
        self._process = subprocess.Popen(
            [sys.executable, '-m', 'tests.benchmarks.receiver',
             str(self.port), self._secret], stdout=subprocess.PIPE,
            cwd=os.getcwd())
        self._process.stdout.readline()
        return self

    def mark(self):
        """Start counting its CPU time (at the first cast)."""
        self._cpu_at = _cpu_seconds(self._process.pid)

    def cpu_seconds(self):
        """Its CPU time since ``mark``."""
        return _cpu_seconds(self._process.pid) - self._cpu_at

    def stats(self):
        """Its figures (``_Tally.stats``)."""
        with urllib.request.urlopen('http://127.0.0.1:%d/stats'
                                    % self.port, timeout=10) as answer:
            return json.loads(answer.read())

    def count(self):
        """How many events it acknowledged in order."""
        return self.stats()['events']

    def stop(self):
        """Stop the process."""
        self._process.terminate()
        self._process.wait(10)


def _cpu_seconds(pid):
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


if __name__ == '__main__':
    asyncio.run(_serve(int(sys.argv[1]), sys.argv[2]))
