"""The announcements of orders on the bus (``worker.notifications.bus``), with
oslo.messaging's in-memory ``test`` driver or a fake notifier: no broker.
"""

import datetime
import logging
import threading
import time

from oslo_messaging.notify import _impl_test
import prometheus_client

from tests import config
from worker.db import models
from worker.notifications import bus
from worker import values

NOW = datetime.datetime(2026, 11, 26, 12, 0, 0, 1234)
IDS = values.RequestIds('req-1', 'req-global')


def _wait(predicate):
    event = threading.Event()
    for _ in range(500):
        if predicate():
            return
        event.wait(0.01)
    raise AssertionError('not reached')


class BlockingNotifier:
    """A notifier whose sends wait until ``release``; records them."""

    def __init__(self):
        self.sent = []
        self.release = threading.Event()

    def info(self, ctxt, event_type, payload):
        self.release.wait(10)
        self.sent.append((ctxt, event_type, payload))


class SwallowingNotifier:
    """Fails as oslo.messaging's messaging driver does: logs the error
    and returns."""

    def __init__(self):
        self.calls = 0

    def info(self, ctxt, event_type, payload):
        self.calls += 1
        try:
            raise ConnectionRefusedError('[Errno 111] Connection refused')
        except ConnectionRefusedError:
            logging.getLogger('oslo_messaging.notify.messaging').exception(
                'Could not send notification to notifications. '
                'Payload=%s', payload)


def test_without_a_driver_nothing_is_built():
    conf = config.make_conf()
    before = threading.active_count()
    assert bus.from_conf(conf) is None
    assert threading.active_count() == before


def test_an_order_is_announced_with_its_payload_version_and_publisher():
    _impl_test.reset()
    conf = config.make_conf(host='node-1')
    bus.register_opts(conf)
    conf.set_override('driver', ['test'], 'oslo_messaging_notifications')
    conf.set_override('transport_url', 'fake://',
                      'oslo_messaging_notifications')
    registry = prometheus_client.CollectorRegistry()
    announcer = bus.from_conf(conf, registry)
    try:
        announcer.order(bus.ERROR, 'o1', 'p1', models.ERROR, NOW,
                        reason='step issue failed', request=IDS)
        _wait(lambda: _impl_test.NOTIFICATIONS)
    finally:
        announcer.close()
    [(ctxt, message, priority, retry)] = _impl_test.NOTIFICATIONS
    assert (message['publisher_id'], message['event_type'], priority) == (
        'barbican-retry.node-1', 'order.error', 'INFO')
    # -1, oslo.messaging's "for ever", is bounded.
    assert retry == bus.DEFAULT_RETRY
    payload = dict(message['payload'])
    assert payload.pop('event_id')
    assert payload == {
        'payload_version': '1.0', 'order_id': 'o1', 'project_id': 'p1',
        'time': '2026-11-26T12:00:00.001234Z', 'status': models.ERROR,
        'event': 'order.error', 'detail': {'reason': 'step issue failed'}}
    assert (ctxt['request_id'], ctxt['global_request_id']) == (
        'req-1', 'req-global')
    assert announcer.counts == {'sent': 1, 'dropped': 0, 'failed': 0}
    assert registry.get_sample_value(
        'barbican_retry_bus_notifications_total', {'result': 'sent'}) == 1


def test_a_full_queue_drops_and_counts_without_blocking():
    notifier = BlockingNotifier()
    announcer = bus.Announcer(notifier, max_queued=2)
    announcer.start()
    try:
        # The first is taken by the thread, two wait, two are dropped.
        announcer.order(bus.CREATE, 'o0', 'p', models.PENDING, NOW)
        _wait(lambda: announcer._queue.empty())
        for number in range(1, 5):
            announcer.order(bus.CREATE, 'o%d' % number, 'p',
                            models.PENDING, NOW)
        assert announcer.counts['dropped'] == 2
        notifier.release.set()
        _wait(lambda: len(notifier.sent) == 3)
    finally:
        announcer.close()
    assert [payload['order_id'] for _, _, payload in notifier.sent] == [
        'o0', 'o1', 'o2']
    assert announcer.counts == {'sent': 3, 'dropped': 2, 'failed': 0}


def test_a_swallowed_failure_is_counted_and_logged_once_a_minute(caplog):
    notifier = SwallowingNotifier()
    announcer = bus.Announcer(notifier)
    announcer.start()
    try:
        with caplog.at_level(logging.WARNING):
            for number in range(3):
                announcer.order(bus.CREATE, 'o%d' % number, 'p',
                                models.PENDING, NOW)
            _wait(lambda: announcer.counts['failed'] == 3)
    finally:
        announcer.close()
    assert announcer.counts == {'sent': 0, 'dropped': 0, 'failed': 3}
    lines = [record.getMessage() for record in caplog.records]
    # oslo.messaging's own line (with the whole payload) is held back.
    assert not any('Payload=' in line for line in lines)
    [line] = [line for line in lines if 'Could not send' in line]
    assert 'order.create of order o0' in line
    assert 'Connection refused' in line


def test_a_notifier_on_a_dead_broker_does_not_slow_the_caller():
    notifier = BlockingNotifier()
    announcer = bus.Announcer(notifier, max_queued=10)
    announcer.start()
    try:
        started = datetime.datetime.now()
        for number in range(100):
            announcer.order(bus.CREATE, str(number), 'p', models.PENDING,
                            NOW)
        assert datetime.datetime.now() - started < datetime.timedelta(
            seconds=1)
    finally:
        notifier.release.set()
        announcer.close()
    assert announcer.counts['dropped'] >= 89


def test_flush_waits_for_the_announcements_before_but_not_for_a_slow_broker(
        monkeypatch):
    monkeypatch.setattr(bus, 'SLOW_SEND_SECONDS', 0.3)
    notifier = BlockingNotifier()
    announcer = bus.Announcer(notifier)
    announcer.start()
    try:
        announcer.order(bus.CREATE, 'a', 'p', models.PENDING, NOW)
        releaser = threading.Timer(0.1, notifier.release.set)
        releaser.start()
        # Sent 0.1 s later: waited for.
        assert announcer.flush(timeout=5)
        assert [sent[1] for sent in notifier.sent] == [bus.CREATE]
        notifier.release.clear()
        announcer.order(bus.ACTIVE, 'a', 'p', models.ACTIVE, NOW)
        started = time.monotonic()
        # A send that takes longer than SLOW_SEND_SECONDS: not waited for
        # beyond that, though the timeout is longer.
        assert not announcer.flush(timeout=5)
        assert time.monotonic() - started < 2
    finally:
        notifier.release.set()
        announcer.close()


def test_flush_does_not_wait_after_a_failure(monkeypatch):
    monkeypatch.setattr(bus, 'SLOW_SEND_SECONDS', 60.0)
    failing, blocking = SwallowingNotifier(), BlockingNotifier()
    notifiers = iter([failing, blocking])

    class FailsThenBlocks:
        def info(self, *args):
            next(notifiers).info(*args)

    announcer = bus.Announcer(FailsThenBlocks())
    announcer.start()
    try:
        announcer.order(bus.CREATE, 'a', 'p', models.PENDING, NOW)
        announcer.flush(timeout=5)
        assert announcer.counts['failed'] == 1
        # The broker failed a moment ago: the next flush returns at once
        # though its send hangs.
        announcer.order(bus.ACTIVE, 'a', 'p', models.ACTIVE, NOW)
        started = time.monotonic()
        assert not announcer.flush(timeout=5)
        assert time.monotonic() - started < 1
    finally:
        blocking.release.set()
        announcer.close()
