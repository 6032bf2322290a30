"""Fakes implementing the real interfaces, for tests without a broker."""

import collections
import contextlib
import logging
import threading

from oslo_config import cfg
from oslo_context import context as oslo_context
from oslo_db import exception as db_exc
from oslo_log import formatters
from oslo_log import log as oslo_log

from worker import rpc


class CastFailed(Exception):
    """What the fake client raises for a cast told to fail."""


class RecordingRPCClient:
    """Records casts like an ``oslo_messaging.RPCClient`` would send them.

    ``casts`` holds one ``(method, kwargs)`` per step: a ``run_steps``
    message is recorded as its steps, so that a test reads the same list
    whether the steps came one per message or several. ``messages`` holds
    the messages themselves, with the version each was prepared for, and
    ``contexts`` the context of each, as ``worker.rpc.ContextSerializer``
    puts it on the wire (``delivered`` gives it as a worker reads it).

    :param fail: a predicate ``fail(method, kwargs)`` over steps; a message
        with a step for which it is true raises ``CastFailed`` and is not
        recorded.
    """

    def __init__(self, fail=None):
        self.casts = []
        self.messages = []
        self.contexts = []
        self._fail = fail
        self._version = None
        self._lock = threading.Lock()

    def prepare(self, version=None, **kwargs):
        """Like ``RPCClient.prepare``: the next cast is for ``version``."""
        self._version = version
        return self

    def cast(self, ctxt, method, **kwargs):
        """Record one message (or fail it)."""
        if method == 'run_steps':
            steps = [(name, {'order_id': order_id, 'generation': generation})
                     for name, order_id, generation in kwargs['steps']]
        else:
            steps = [(method, kwargs)]
        version, self._version = self._version, None
        if self._fail is not None and any(self._fail(name, step_kwargs)
                                          for name, step_kwargs in steps):
            raise CastFailed('cast of %s refused by the test' % method)
        with self._lock:
            self.casts.extend(steps)
            self.messages.append((method, version, kwargs))
            self.contexts.append(_SERIALIZER.serialize_context(ctxt))

    def delivered(self):
        """Take the oldest message: ``(context, kwargs)``, its context as
        the worker's RPC server gives it to the endpoint."""
        with self._lock:
            _, _, kwargs = self.messages.pop(0)
            ctxt = self.contexts.pop(0)
        return _SERIALIZER.deserialize_context(ctxt), kwargs

    def count_by_order(self):
        """Return ``Counter(order_id)`` over the recorded casts."""
        return collections.Counter(kwargs['order_id']
                                   for _, kwargs in self.casts)


_SERIALIZER = rpc.ContextSerializer()


class LogLines(logging.Handler):
    """Records each line as oslo.log writes it, with the context it was
    written with (its own, ``LOG.info(..., context=c)``, or its
    thread's): ``found`` holds ``(message, levelno, context, line)``."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        conf = cfg.ConfigOpts()
        oslo_log.register_options(conf)
        conf([])
        self.setFormatter(formatters.ContextFormatter(config=conf))
        self.found = []

    def emit(self, record):
        """Record one line."""
        ctxt = record.__dict__.get('context', oslo_context.get_current())
        self.found.append((record.getMessage(), record.levelno, ctxt,
                           self.format(record)))

    def about(self, text):
        """``(message, levelno, context, line)`` of the lines whose
        message holds ``text``."""
        return [found for found in self.found if text in found[0]]


@contextlib.contextmanager
def log_lines(name):
    """``LogLines`` of logger ``name`` and its children, at DEBUG, for the
    block."""
    handler = LogLines()
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def lose_races(monkeypatch, repository, name, times):
    """Make ``repository.name`` run, then raise a deadlock, ``times``
    times, as a Galera node refuses a write set at COMMIT when another
    node wrote the same rows first."""
    real = getattr(repository, name)
    left = [times]

    def losing(*args, **kwargs):
        result = real(*args, **kwargs)
        if left[0]:
            left[0] -= 1
            raise db_exc.DBDeadlock()
        return result
    monkeypatch.setattr(repository, name, losing)


class Extreme:
    """A ``worker.common.randomness.Uniform`` that always draws one end of
    the range: the lowest (no jitter, no spread) or the highest."""

    def __init__(self, highest=False):
        self._highest = highest

    def uniform(self, a, b):
        """``b`` if drawing the highest, else ``a``."""
        return b if self._highest else a


class RecordingAnnouncer:
    """A ``worker.notifications.bus.Announcer`` that records what it is
    asked to announce: ``(event_type, order_id, project_id, status,
    reason)``."""

    def __init__(self, on_flush=None):
        self.announced = []
        self._on_flush = on_flush

    def order(self, event_type, order_id, project_id, status, moment,
              reason=None, request=None):
        """Record one announcement."""
        self.announced.append((event_type, order_id, project_id, status,
                               reason))

    def flush(self):
        """Call ``on_flush``, if given (to see what was cast before)."""
        if self._on_flush is not None:
            self._on_flush()
        return True
