"""HTTP load for the REST API's measurement: closed-loop clients, paced
(open-loop) requests and latency percentiles.

Clients are threads, each with a ``requests.Session`` of its own (one
keep-alive connection each). A thread spends most of a request waiting
on its socket, where it holds no GIL; the client CPU per request is
measured beside the rates (``client_cpu_ms``), so a run shows whether the
client, not the server, was the limit.
"""

import concurrent.futures
import math
import threading
import time

import psutil
import requests

#: Seconds a request may take before it counts as failed.
TIMEOUT = 60


def percentile(values, fraction):
    """The ``fraction`` (0 to 1) quantile of ``values``, nearest rank."""
    if not values:
        return float('nan')
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[min(len(ordered), rank) - 1]


def summary_ms(seconds):
    """``{count, p50_ms, p99_ms, max_ms}`` of latencies in seconds."""
    return {'count': len(seconds),
            'p50_ms': 1000.0 * percentile(seconds, 0.50),
            'p99_ms': 1000.0 * percentile(seconds, 0.99),
            'max_ms': 1000.0 * max(seconds) if seconds else float('nan')}


class Client:
    """One keep-alive connection to the API, sending as one caller."""

    def __init__(self, base_url, headers):
        self._base_url = base_url
        self._session = requests.Session()
        self._session.headers.update(headers)

    def post(self, path, body):
        """POST ``body`` as JSON; the status code."""
        return self._session.post(self._base_url + path, json=body,
                                  timeout=TIMEOUT).status_code

    def get(self, path):
        """GET ``path``; the response."""
        return self._session.get(self._base_url + path, timeout=TIMEOUT)

    def close(self):
        """Close its connection."""
        self._session.close()


class Pool:
    """``size`` clients and the threads that drive them."""

    def __init__(self, base_url, headers, size):
        self.clients = [Client(base_url, headers) for _ in range(size)]
        self._executor = concurrent.futures.ThreadPoolExecutor(size)

    def each(self, function, counts):
        """``function(client, count)`` on every client at once (``counts``
        one per client); their results, once all returned."""
        futures = [self._executor.submit(function, client, count)
                   for client, count in zip(self.clients, counts)]
        return [future.result() for future in futures]

    def close(self):
        """Stop the threads, close the connections."""
        self._executor.shutdown()
        for client in self.clients:
            client.close()


def split(total, parts):
    """``total`` as ``parts`` near-equal counts."""
    return [total // parts + (1 if index < total % parts else 0)
            for index in range(parts)]


class CpuClock:
    """This process's CPU seconds (user + system) since it was made."""

    def __init__(self):
        self._process = psutil.Process()
        self._start = self._seconds()

    def _seconds(self):
        times = self._process.cpu_times()
        return times.user + times.system

    def spent(self):
        """CPU seconds since the start."""
        return self._seconds() - self._start


def closed_loop(pool, total, send):
    """``total`` requests over the pool's clients, each client sending
    its next as soon as its last returned.

    :param send: ``send(client)``, one request; true if it succeeded.
    :returns: ``{requests, failed, seconds, rate, client_cpu_ms}``.
    """
    def run(client, count):
        return sum(0 if send(client) else 1 for _ in range(count))
    clock = CpuClock()
    started = time.perf_counter()
    failed = sum(pool.each(run, split(total, len(pool.clients))))
    seconds = time.perf_counter() - started
    return {'requests': total, 'failed': failed, 'seconds': seconds,
            'rate': total / seconds,
            'client_cpu_ms': 1000.0 * clock.spent() / total}


def open_loop(pool, rate, total, send):
    """``total`` requests paced at ``rate`` a second whatever the answers
    (request ``i`` is due at ``start + i / rate``), spread over the
    pool's clients.

    A request's latency runs from when it was due, not from when a free
    client sent it: a server that falls behind shows in the figures
    rather than slowing the sender down (no coordinated omission).

    :returns: ``{requests, failed, rate_asked, rate, latency}``.
    """
    size = len(pool.clients)
    start = time.perf_counter() + 0.2
    latencies = []
    lock = threading.Lock()

    def run(client, offset):
        mine, failed = [], 0
        for index in range(offset, total, size):
            due = start + index / rate
            wait = due - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            failed += 0 if send(client) else 1
            mine.append(time.perf_counter() - due)
        with lock:
            latencies.extend(mine)
        return failed
    failed = sum(pool.each(run, range(size)))
    seconds = time.perf_counter() - start
    return {'requests': total, 'failed': failed, 'rate_asked': rate,
            'rate': total / seconds, 'latency': summary_ms(latencies)}


def sequential(client, total, send):
    """``total`` requests one after the other from one client; the
    latency summary and the failures."""
    latencies, failed = [], 0
    for _ in range(total):
        started = time.perf_counter()
        failed += 0 if send(client) else 1
        latencies.append(time.perf_counter() - started)
    return {'requests': total, 'failed': failed,
            'latency': summary_ms(latencies)}
