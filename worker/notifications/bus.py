"""oslo.messaging notifications of orders: the announcements on the bus.

With ``[oslo_messaging_notifications] driver`` set, every order's
creation and status change is announced with oslo.messaging's
``Notifier`` on ``get_notification_transport(conf)``, as nova, cinder
and barbican announce theirs: publisher id ``barbican-retry.<host>``,
event types ``EVENT_TYPES``, at the INFO priority. The payload is the
webhook event's fields (``worker.notifications.events.payload``) with
``payload_version`` (``PAYLOAD_VERSION``): a consumer checks its major
number before it reads the rest.

An announcement is made after its change committed, by whichever
process made it (``worker.api``, the workers' applier, the retry
daemon's ticks). It never fails nor slows the order: ``Announcer.order``
only puts it on a bounded queue, which one background thread drains; a
full queue drops it and counts it. The thread sends with a bounded
``retry``, so a dead broker holds it a few seconds per announcement, not
for ever. oslo.messaging logs and swallows a failed send
(``notify/messaging.py`` and ``notifier.py`` catch every exception): a
filter on those two loggers tells the thread that its send failed,
which it counts and logs at most once per ``LOG_EVERY_SECONDS``.
The errors the driver logs at each attempt to reach a dead broker are
kept out of the log too, in that thread only: the rate-limited line
says it all.

An order's first announcements are made by the process that creates or
resumes it, its later ones by the worker that ends it: so that a
consumer does not see ``order.active`` before ``order.create``, the API
waits for its announcements to be sent before it casts the order's steps
(``Announcer.flush``), for ``FLUSH_SECONDS`` at most, and not at all
while the broker is failing or slow: an outage does not slow orders.

Without a driver (the default) nothing is built and nothing is queued:
``from_conf`` returns None.
"""

import datetime
import logging as std_logging
import queue
import threading
import time
import uuid

from oslo_log import log as logging
import oslo_messaging
from oslo_messaging import opts as messaging_opts
from oslo_messaging import serializer as messaging_serializer
import prometheus_client

from worker import context as context_module
from worker.db import models
from worker import rpc

LOG = logging.getLogger(__name__)

#: The event types, one per change announced (doc/operations.md).
EVENT_TYPES = CREATE, ACTIVE, ERROR, CANCELLED, RESUMED, PAUSED, \
    UNPAUSED = (
        'order.create', 'order.active', 'order.error', 'order.cancelled',
        'order.resumed', 'order.paused', 'order.unpaused')
#: The payload's version: the major number changes when a field changes
#: meaning or goes away, the minor when a field is added.
PAYLOAD_VERSION = '1.0'
#: The event type of an order's move to a status, by the status.
OF_STATUS = {models.ACTIVE: ACTIVE, models.ERROR: ERROR,
             models.CANCELLED: CANCELLED}
#: Announcements waiting for the thread at most; more are dropped.
MAX_QUEUED = 10000
#: The ``retry`` of a send when ``[oslo_messaging_notifications] retry``
#: is -1 (oslo.messaging's "for ever"): a dead broker would hold the
#: thread, and every announcement after, until it came back.
DEFAULT_RETRY = 2
#: A failed send is logged at most once in this many seconds.
LOG_EVERY_SECONDS = 60.0
#: How long ``flush`` waits at most for the announcements queued before.
FLUSH_SECONDS = 0.5
#: A send that has taken this long, or failed this recently, tells
#: ``flush`` not to wait: the broker is slow or down.
SLOW_SEND_SECONDS = 0.2
FAILED_RECENTLY_SECONDS = 30.0
#: The loggers of oslo.messaging that report a failed send.
_SEND_LOGGERS = ('oslo_messaging.notify.messaging',
                 'oslo_messaging.notify.notifier')
#: Its loggers that report each attempt to reach the broker, before the
#: send succeeds or fails.
_ATTEMPT_LOGGERS = ('oslo.messaging._drivers.impl_rabbit',)
#: The labels of ``counter``'s series.
SENT, DROPPED, FAILED = 'sent', 'dropped', 'failed'
RESULTS = (SENT, DROPPED, FAILED)


def counter(registry):
    """The Prometheus counter of a process's announcements, by result,
    each series exported from the start at 0."""
    made = prometheus_client.Counter(
        'barbican_retry_bus_notifications', 'oslo.messaging notifications '
        'of orders ([oslo_messaging_notifications] driver), by result: '
        'sent, dropped (the queue of MAX_QUEUED was full: the broker is '
        'slow or down), failed (the send failed after its retries).',
        ['result'], registry=registry)
    for result in RESULTS:
        made.labels(result=result)
    return made


def register_opts(conf):
    """Register oslo.messaging's ``[oslo_messaging_notifications]``
    options, which ``from_conf`` reads before it builds anything."""
    for group, opts in messaging_opts.list_opts():
        if group == 'oslo_messaging_notifications':
            conf.register_opts(opts, group=group)


def from_conf(conf, registry=None):
    """An ``Announcer`` started on ``conf``'s notification transport, or
    None without ``[oslo_messaging_notifications] driver``.

    Build it in the process that uses it (after a fork): it owns a
    thread and a connection.

    :param registry: the process's Prometheus registry, or None.
    """
    register_opts(conf)
    options = conf.oslo_messaging_notifications
    if not options.driver:
        return None
    # The exchange and queues of our RPC: ``[DEFAULT] control_exchange``
    # (``barbican_retry``), durable.
    rpc.set_defaults()
    transport = oslo_messaging.get_notification_transport(conf)
    retry = options.retry if options.retry >= 0 else DEFAULT_RETRY
    notifier = oslo_messaging.Notifier(
        transport, publisher_id='barbican-retry.%s' % conf.host,
        retry=retry, serializer=_ContextSerializer())
    announcer = Announcer(notifier, registry=registry, transport=transport)
    announcer.start()
    return announcer


def payload(event_type, order_id, project_id, status, moment,
            reason=None):
    """The payload of one announcement: the webhook event's fields
    (``worker.notifications.events.payload``) but ``sequence``, which
    counts the events kept for an order's deliveries only; and
    ``payload_version``."""
    body = {
        'payload_version': PAYLOAD_VERSION,
        'event_id': str(uuid.uuid4()),
        'order_id': order_id,
        'project_id': project_id,
        'time': moment.replace(tzinfo=datetime.timezone.utc).isoformat(
            timespec='microseconds').replace('+00:00', 'Z'),
        'status': status,
        'event': event_type,
    }
    if reason:
        body['detail'] = {'reason': reason}
    return body


class Announcer:
    """Sends the announcements of orders from a queue, in one thread.

    :param notifier: an ``oslo_messaging.Notifier``.
    :param registry: a Prometheus registry for ``counter``, or None.
    :param transport: the notifier's transport, cleaned up by ``close``.
    :param max_queued: the queue's bound.
    """

    def __init__(self, notifier, registry=None, transport=None,
                 max_queued=MAX_QUEUED):
        self._notifier = notifier
        self._transport = transport
        self._queue = queue.Queue(max_queued)
        self._counter = counter(registry) if registry is not None else None
        #: ``{result: count}`` of this process, as the counter has them.
        self.counts = dict.fromkeys(RESULTS, 0)
        self._lock = threading.Lock()
        self._thread = None
        self._catcher = _FailureCatcher()
        self._last_logged = None
        # Announcements queued and handled (sent, failed), under
        # ``_handled``; when the current send started and when one last
        # failed (monotonic), for ``flush``.
        self._handled = threading.Condition()
        self._queued_count = 0
        self._handled_count = 0
        self._sending_since = None
        self._failed_at = None

    def start(self):
        """Start the thread that sends."""
        for name in _SEND_LOGGERS + _ATTEMPT_LOGGERS:
            std_logging.getLogger(name).addFilter(self._catcher)
        self._thread = threading.Thread(target=self._drain, daemon=True,
                                        name='bus-notifications')
        self._catcher.thread = self._thread
        self._thread.start()

    def order(self, event_type, order_id, project_id, status, moment,
              reason=None, request=None):
        """Queue the announcement of one order's change; never blocks.

        :param moment: when it changed (naive UTC).
        :param request: the order's ``worker.values.RequestIds``, which
            the notification's context carries.
        """
        item = (event_type, request,
                payload(event_type, order_id, project_id, status, moment,
                        reason))
        with self._handled:
            try:
                self._queue.put_nowait(item)
            except queue.Full:
                self._count(DROPPED)
                return
            self._queued_count += 1

    def flush(self, timeout=FLUSH_SECONDS):
        """Wait until the announcements queued so far are sent (or failed),
        for ``timeout`` seconds at most; at once while the broker is slow
        or failing. True if they were."""
        deadline = time.monotonic() + timeout
        with self._handled:
            target = self._queued_count
            while self._handled_count < target:
                left = deadline - time.monotonic()
                if left <= 0 or self._broker_in_trouble():
                    return False
                # In slices: a send turns slow without a notification.
                self._handled.wait(min(left, SLOW_SEND_SECONDS / 4))
            return True

    def _broker_in_trouble(self):
        """Whether a send is slow or one failed lately (holding
        ``_handled``)."""
        now = time.monotonic()
        return ((self._sending_since is not None and
                 now - self._sending_since >= SLOW_SEND_SECONDS) or
                (self._failed_at is not None and
                 now - self._failed_at < FAILED_RECENTLY_SECONDS))

    def close(self, timeout=2.0):
        """Send what is queued for ``timeout`` seconds at most, stop the
        thread, close the transport; what is left is dropped."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout)
            for name in _SEND_LOGGERS + _ATTEMPT_LOGGERS:
                std_logging.getLogger(name).removeFilter(self._catcher)
        if self._transport is not None:
            self._transport.cleanup()

    def _drain(self):
        while True:
            item = self._queue.get()
            if item is None:
                return
            with self._handled:
                self._sending_since = time.monotonic()
            failed = self._send(*item)
            with self._handled:
                self._sending_since = None
                if failed:
                    self._failed_at = time.monotonic()
                self._handled_count += 1
                self._handled.notify_all()

    def _send(self, event_type, request, body):
        """Send one announcement; True if it failed."""
        self._catcher.failure = None
        try:
            self._notifier.info(context_module.for_ids(request), event_type,
                                body)
        except Exception as exc:
            # A driver that raises, unlike oslo.messaging's own.
            self._catcher.failure = exc
        failure = self._catcher.failure
        if failure is None:
            self._count(SENT)
            return False
        self._count(FAILED)
        now = time.monotonic()
        if (self._last_logged is None or
                now - self._last_logged >= LOG_EVERY_SECONDS):
            self._last_logged = now
            LOG.warning('Could not send the notification %s of order %s '
                        '(%s); %d failed and %d dropped since this process '
                        'started. Orders are not affected.', event_type,
                        body['order_id'], failure, self.counts[FAILED],
                        self.counts[DROPPED])
        return True

    def _count(self, result):
        with self._lock:
            self.counts[result] += 1
        if self._counter is not None:
            self._counter.labels(result=result).inc()


class _FailureCatcher(std_logging.Filter):
    """Takes the error records oslo.messaging logs in the sending thread:
    keeps them out of the log (the announcer logs the failures itself,
    rate-limited, without the whole payload), and records those of
    ``_SEND_LOGGERS`` (a send it swallowed) as the send's failure."""

    def __init__(self):
        super().__init__()
        self.thread = None
        self.failure = None

    def filter(self, record):
        """False for the sending thread's error records."""
        if (threading.current_thread() is not self.thread or
                record.levelno < std_logging.ERROR):
            return True
        if record.name in _SEND_LOGGERS:
            error = record.exc_info[1] if record.exc_info else None
            self.failure = error or record.getMessage()
        return False


class _ContextSerializer(messaging_serializer.NoOpSerializer):
    """Sends the order's request ids as the notification's context
    (oslo.context's dict), or an empty one for an order without."""

    def serialize_context(self, ctxt):
        """The context as a dict."""
        return ctxt.to_dict() if hasattr(ctxt, 'to_dict') else {}
