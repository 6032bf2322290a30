"""A webhook POST as a span of its order's trace (``worker.tracing``).

``TracedSender`` wraps the worker's ``sender.Sender`` when tracing is on:
each ``send`` is a ``webhook.post`` span, child of the delivery's ``run``
span, current while the request is made so that the request's
``traceparent`` header (``tracing.inject``, in ``sender.Sender.send``)
names it, and a receiver's own tracer joins the trace.
"""

from worker import tracing


class TracedSender:
    """A sender whose ``send`` is a span; the rest is the sender's.

    :param sender: a ``worker.notifications.sender.Sender`` (or a fake
        with the same ``send(url, payload, keys)``).
    """

    def __init__(self, sender):
        self._sender = sender

    def __getattr__(self, name):
        return getattr(self._sender, name)

    def send(self, url, payload, keys=()):
        """POST ``payload`` to ``url``, signed under ``keys``, inside a
        ``webhook.post`` span; None if acknowledged, else what went wrong
        (the span fails)."""
        with tracing.span('webhook.post', {
                'http.request.method': 'POST', 'url.full': url,
                'barbican_retry.event_id': payload.get('event_id'),
                'barbican_retry.event': payload.get('event'),
        }) as span:
            failure = self._sender.send(url, payload, keys)
            if failure is not None:
                span.fail(failure)
            return failure
