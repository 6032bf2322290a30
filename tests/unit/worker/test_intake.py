"""worker.intake: the room of steps received and not started, and the
RPC server that waits for it (over oslo.messaging's fake driver)."""

import threading
import time

from oslo_config import cfg
import oslo_messaging as messaging

from worker import intake
from worker import metrics
from worker import rpc


def _in_thread(function, *args):
    thread = threading.Thread(target=function, args=args, daemon=True)
    thread.start()
    return thread


def test_a_step_waits_until_the_room_has_space():
    room = intake.Room(3)
    room.take(2)
    waiting = _in_thread(room.take, 2)
    waiting.join(0.2)
    assert waiting.is_alive() and room.taken == 2
    room.give_back(1)
    waiting.join(5)
    assert not waiting.is_alive() and room.taken == 3


def test_a_message_larger_than_the_room_waits_until_it_is_empty():
    room = intake.Room(3)
    room.take(1)
    waiting = _in_thread(room.take, 50)
    waiting.join(0.2)
    assert waiting.is_alive()
    room.give_back(1)
    waiting.join(5)
    # It counts as the whole room, and gives back as much.
    assert not waiting.is_alive() and room.taken == 3
    room.give_back(50)
    assert room.taken == 0


def test_an_open_room_makes_no_one_wait():
    room = intake.Room(1)
    room.take(1)
    waiting = _in_thread(room.take, 1)
    room.open()
    waiting.join(5)
    assert not waiting.is_alive()


def test_the_room_is_exported_as_it_is_at_each_scrape():
    room = intake.Room(10)
    exported = metrics.WorkerMetrics()
    exported.export_queued_steps(room)

    def queued():
        return exported.registry.get_sample_value(
            'barbican_retry_worker_queued_steps')
    assert queued() == 0
    room.take(3)
    assert queued() == 3


class _Message:
    def __init__(self, body):
        self.message = body


def test_a_message_counts_its_steps():
    def run_steps(steps):
        return {'method': 'run_steps', 'args': {'steps': steps}}
    assert intake.steps_in([_Message(run_steps([[1], [2], [3]]))]) == 3
    assert intake.steps_in([_Message({'method': 'process_type_order',
                                      'args': {}})]) == 1
    # Whatever a hostile sender made of it counts one: the dispatcher and
    # the manager refuse it later.
    for body in (run_steps([]), run_steps('xx'), {'method': 'run_steps'},
                 {'method': 'run_steps', 'args': []}, None, 'text'):
        assert intake.steps_in([_Message(body)]) == 1
    assert intake.steps_in([_Message(run_steps([[1], [2]])),
                            _Message(None)]) == 3


class _HeldEndpoint:
    """Runs each message until the gate opens; counts them."""

    target = messaging.Target(version=rpc.RPC_API_VERSION)

    def __init__(self, gate):
        self.gate = gate
        self.steps = 0
        self._lock = threading.Lock()

    @messaging.expose
    def run_steps(self, ctxt, steps):
        with self._lock:
            self.steps += len(steps)
        self.gate.wait(10)


def _wait_until(predicate, timeout=10):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, 'timed out'
        time.sleep(0.01)


def test_a_full_worker_leaves_the_rest_to_another():
    # The global CONF: oslo.messaging registers its tracing options there
    # only, and a client reads them.
    transport = messaging.get_rpc_transport(cfg.CONF, url='fake:')
    held = _HeldEndpoint(threading.Event())
    free = _HeldEndpoint(threading.Event())
    free.gate.set()
    room = intake.Room(5)
    full = rpc.get_server(transport, 'intake', 'host-a', [held],
                          intake.bounded(room))
    other = rpc.get_server(transport, 'intake', 'host-b', [free])
    # Two threads run messages; five steps wait for them, no more.
    full.start(override_pool_size=2)
    started = [full]
    try:
        client = messaging.get_rpc_client(
            transport, messaging.Target(topic='intake', version='1.1'))
        for number in range(20):
            client.cast({}, 'run_steps', steps=[['issue', 'o-%d' % number,
                                                 0]])
        _wait_until(lambda: held.steps == 2 and room.taken == 5)
        # Its listener waits with one more; the other 12 are still queued,
        # and go to the worker that has room.
        other.start()
        started.append(other)
        _wait_until(lambda: free.steps == 12)
        time.sleep(0.2)
        assert (held.steps, room.taken, free.steps) == (2, 5, 12)
        held.gate.set()
        _wait_until(lambda: held.steps == 8)
        assert room.taken == 0
    finally:
        held.gate.set()
        room.open()
        for server in started:
            server.stop()
            server.wait()
        transport.cleanup()
