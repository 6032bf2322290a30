"""What a worker process takes in: at most ``[worker] max_queued_steps``.

Where a received message waits, as read in oslo.messaging 18's code:

1. The rabbit driver's consumer callback (``_drivers/amqpdriver.py
   RpcAMQPListener.__call__``), in the listener's thread, acknowledges an
   RPC message as it reads it off the connection, then keeps it for the
   server (``message.acknowledge()`` in ``rpc/server.py
   RPCServer._process_incoming`` is a no-op for that driver).
2. The server hands it over at once (``server.py
   MessageHandlingServer._on_incoming``) to its executor: futurist's
   ``ThreadPoolExecutor``, whose queue has no bound (oslo.messaging makes
   it with ``max_workers`` only; no option gives it ``check_and_reject``).
3. One of ``executor_thread_pool_size`` threads runs it.

So the broker hands a process every message it has, however many the
threads can run, and ``rabbit_qos_prefetch_count`` alone cannot stop it:
the acknowledgement frees the prefetch window as the message is read. A
burst of 8,000 casts was 113-126 MB in one worker process. Measured with
the rabbit driver: each single-step message waiting in the executor's
queue costs about 7 KB of RSS, 6.5 KB of it Python objects (tracemalloc):
futurist's future and work item with their condition and lock, the
decoded JSON body and context, the driver's and kombu's message objects
and the raw frame.

``BoundedRPCServer`` bounds step 2: its ``_on_incoming`` waits, in the
listener's thread, until the executor's queue has room for the message's
steps. While it waits the listener reads nothing more, so nothing more is
acknowledged: the broker sends this consumer at most
``rabbit_qos_prefetch_count`` more messages (they wait unread in the
connection, still unacknowledged) and keeps the rest ready in the topic's
queue, for whichever worker process has room. Nothing is dropped and no
step waits for a dispatch deadline; a process that dies returns its
unread messages to the queue. While the room stays full (every thread on
a hung call) the connection stays alive: oslo.messaging's heartbeat
thread reads it every few seconds for the broker's heartbeats, and may
take one message each time, which waits beside the listener's.

Why not drop what is beyond the bound and let the retry daemon dispatch
it again (the database is the truth)? A message reaches the manager only
after the executor's queue, which is what grows; a dropped step waits
``[scheduler] dispatch_deadline_seconds`` (300 s) before it is cast again,
so a burst of 100,000 would come back in waves; and the broker, which is
made to hold queues, would sit idle meanwhile.

NOTE: ``_on_incoming`` and ``_process_incoming`` are private methods of
oslo.messaging's server. ``get_rpc_server(server_cls=...)`` is public and
``RPCServer`` is its default; these two methods are the only place where
a message passes between the listener and the executor.
``tests/unit/worker/test_rpc_library_internals.py`` fails, naming this
module, if a new oslo.messaging changes them.
"""

import functools
import threading

from oslo_messaging.rpc import server as rpc_server


class Room:
    """Steps received and not yet started, at most ``limit``.

    A message larger than ``limit`` alone takes the whole room (it waits
    until the room is empty), so no message waits for ever.
    """

    def __init__(self, limit):
        self.limit = limit
        self._taken = 0
        self._open = False
        self._changed = threading.Condition()

    @property
    def taken(self):
        """Steps in the room now."""
        return self._taken

    def _clamped(self, steps):
        return min(max(steps, 1), self.limit)

    def take(self, steps):
        """Wait until ``steps`` fit, then take them."""
        steps = self._clamped(steps)
        with self._changed:
            self._changed.wait_for(
                lambda: self._open or self._taken + steps <= self.limit)
            self._taken += steps

    def give_back(self, steps):
        """The steps ``take`` took have started (or never will)."""
        with self._changed:
            self._taken -= self._clamped(steps)
            self._changed.notify_all()

    def open(self):
        """Wait no more: the server is stopping, and what its listener
        read goes on to the executor at once (the manager drops its steps
        unclaimed once it stops too)."""
        with self._changed:
            self._open = True
            self._changed.notify_all()


def steps_in(incoming):
    """How many steps received messages carry: a ``run_steps`` message
    its list's length, any other message one (whatever its body, which the
    dispatcher and the manager check)."""
    total = 0
    for message in incoming:
        body = getattr(message, 'message', None)
        steps = None
        if isinstance(body, dict) and body.get('method') == 'run_steps':
            args = body.get('args')
            steps = args.get('steps') if isinstance(args, dict) else None
        total += len(steps) if isinstance(steps, list) and steps else 1
    return total


def bounded(room):
    """The ``server_cls`` of ``get_rpc_server`` (``worker.rpc.get_server``)
    for a server that holds at most ``room.limit`` steps received and not
    started."""
    return functools.partial(BoundedRPCServer, room=room)


class BoundedRPCServer(rpc_server.RPCServer):
    """An RPC server that holds at most ``room.limit`` steps received and
    not started (built by ``get_rpc_server(server_cls=bounded(room))``).

    Open the room before ``stop()``: the listener may be waiting for room,
    and ``stop()`` waits for the listener.

    NOTE: ``stop()`` is not overridden here: oslo.messaging orders
    ``start``, ``stop`` and ``wait`` by methods it marks (``server.py
    ordered``), and an override would hide the mark.
    """

    def __init__(self, transport, target, dispatcher, executor=None, *,
                 room):
        super().__init__(transport, target, dispatcher, executor)
        self.room = room

    def _on_incoming(self, incoming):
        # In the listener's thread: waiting here is what keeps the rest
        # in the broker.
        steps = steps_in(incoming)
        self.room.take(steps)
        try:
            super()._on_incoming(incoming)
        except BaseException:
            self.room.give_back(steps)
            raise

    def _process_incoming(self, incoming):
        # In an executor thread: the message has started.
        self.room.give_back(steps_in(incoming))
        super()._process_incoming(incoming)
