"""What oslo.messaging alone lets one worker process receive (issue 32).

An order created alone reaches a worker as one message: its first step,
cast by the API server. So one worker process completes at most as many
such orders per second as it can *receive* messages, whatever its claim,
its step and its apply cost. This measures that ceiling on the pool's own
broker and in the same run as the pool and its peers: a process that
only receives, an oslo.messaging RPC server built as the worker builds
its own (the product's transport defaults: prefetch, durable queues; the
threading executor) but with no serializer of ours, and an endpoint
whose ``run_steps`` returns at once.

N messages of one step each, with the request ids the pool's casts carry,
are cast from as many threads as the pool's casts into the server's
queue while it does not consume; then the server starts, and it is timed
from its first message to its N-th, with its CPU time over the same span.
The casts are not timed: the pool's figure does not count its casts
either (they run before and beside its workers).

The server runs in a process of its own (``python -m
tests.benchmarks.receive_floor URL TOPIC N``), as a worker does: one
interpreter, one GIL.
"""

import concurrent.futures
import json
import subprocess
import sys
import threading
import time

from tests.benchmarks import env
from worker import rpcapi
from worker import values

#: The pool's request ids (``worker_pool._ORIGIN``'s), so that each
#: message's context is as large as a pool's cast's.
_REQUEST = values.RequestIds('req-4f1b8c2e-6d0a-4e7b-9c3f-1a2b3c4d5e6f',
                             'req-9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b')
#: Seconds the server may take to receive every message (it gives up at
#: 300 s) before it is killed and the measurement fails.
_TIMEOUT = 360.0


def measure(transport_url, count, threads, log):
    """Messages/s and CPU per message of a receiving-only server, the
    messages cast from ``threads`` threads."""
    topic = env.new_topic('brfloor')
    server = subprocess.Popen(
        [sys.executable, '-m', 'tests.benchmarks.receive_floor',
         transport_url, topic, str(count)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    # A server that hangs (a broker gone) ends its output: no read below
    # waits for ever.
    killer = threading.Timer(_TIMEOUT, server.kill)
    killer.start()
    try:
        # Its queue is declared, and it consumes no more.
        _expect(server, 'declared')
        api = env.worker_api(transport_url, topic)
        messages = [[values.StepRef('check_certificate_status',
                                    '%08d-0000-4000-8000-%012d' % (0, index),
                                    1, _REQUEST)] for index in range(count)]
        log('receive floor: %d messages cast, then received by a no-op '
            'oslo.messaging server', count)
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            list(pool.map(api.run_steps, messages))
        server.stdin.write('go\n')
        server.stdin.flush()
        figures = json.loads(_expect(server, '{'))
    finally:
        killer.cancel()
        server.kill()
        server.wait()
    return figures


def _expect(server, start):
    line = server.stdout.readline()
    if not line.startswith(start):
        raise RuntimeError('receive floor server said %r' % line)
    return line


def _serve(transport_url, topic, count):
    """The server's side: declare the queue, wait for ``go``, receive
    ``count`` messages; print the figures as one JSON line."""
    from oslo_config import cfg
    import oslo_messaging as messaging

    from worker import rpc

    # oslo.messaging registers some options on the global CONF only.
    cfg.CONF([], project='barbican-retry-bench')
    transport = rpc.get_transport(cfg.CONF, url=transport_url)
    received = threading.Event()
    seen = []

    class Endpoint:
        """Takes every message and does nothing with it."""

        target = messaging.Target(version=rpcapi.RUN_STEPS_VERSION)

        @messaging.expose
        def run_steps(self, ctxt, steps):
            """Note the time and CPU of the first and the last."""
            seen.append((time.monotonic(), time.process_time()))
            if len(seen) == count:
                received.set()

    def server():
        return messaging.get_rpc_server(
            transport, messaging.Target(topic=topic, server='receive-floor'),
            [Endpoint()], executor='threading')

    # A cast to a queue that does not exist yet is dropped: declare it,
    # then stop consuming while it fills.
    declaring = server()
    declaring.start()
    time.sleep(2.0)
    declaring.stop()
    declaring.wait()
    seen.clear()
    print('declared', flush=True)
    sys.stdin.readline()
    receiving = server()
    receiving.start()
    received.wait(300)
    (first, first_cpu), (last, last_cpu) = seen[0], seen[-1]
    spent = max(last - first, 1e-9)
    print(json.dumps({
        'messages': len(seen), 'seconds': spent,
        'rate': (len(seen) - 1) / spent,
        'cpu_ms_per_message': 1000.0 * (last_cpu - first_cpu) /
        max(len(seen) - 1, 1)}), flush=True)
    receiving.stop()
    receiving.wait()
    transport.cleanup()


if __name__ == '__main__':
    _serve(sys.argv[1], sys.argv[2], int(sys.argv[3]))
