"""Fakes implementing the real interfaces, for tests without a broker."""

import collections
import threading


class CastFailed(Exception):
    """What the fake client raises for a cast told to fail."""


class RecordingRPCClient:
    """Records casts like an ``oslo_messaging.RPCClient`` would send them.

    :param fail: a predicate ``fail(method, kwargs)``; a cast for which it
        is true raises ``CastFailed`` and is not recorded.
    """

    def __init__(self, fail=None):
        self.casts = []
        self._fail = fail
        self._lock = threading.Lock()

    def cast(self, ctxt, method, **kwargs):
        """Record one cast (or fail it)."""
        if self._fail is not None and self._fail(method, kwargs):
            raise CastFailed('cast of %s refused by the test' % method)
        with self._lock:
            self.casts.append((method, kwargs))

    def count_by_order(self):
        """Return ``Counter(order_id)`` over the recorded casts."""
        return collections.Counter(kwargs['order_id']
                                   for _, kwargs in self.casts)
