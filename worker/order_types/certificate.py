"""The ``certificate`` order type: the blueprint's workflow.

Two steps in sequence over the configured certificate plugin
(``[worker] certificate_plugin``): ``process_type_order`` asks the
certificate authority to issue, ``check_certificate_status`` polls it
until the certificate is issued (R-1), or until the authority says so
with the signal ``certificate.issued`` (``OrderAPI.signal``), which ends
the wait at once.
"""

from worker.order_types import base
from worker import plugins
from worker.plugins import base as results


# In the output of process_type_order when the plugin issued at once.
_ISSUED = 'issued_on_request'
#: The signal that says the certificate is issued.
ISSUED_SIGNAL = 'certificate.issued'
# In the output of check_certificate_status when that signal ended it.
_SIGNALLED = 'issued_by_signal'


class CertificateOrder(base.OrderType):
    """Issue a certificate, then poll until it is issued."""

    steps = (
        base.Step('process_type_order'),
        base.Step('check_certificate_status', after=('process_type_order',),
                  signals=(ISSUED_SIGNAL,)),
    )

    meta_schema = {
        'type': 'object',
        'properties': {
            'unavailable_attempts': {
                'type': 'integer', 'minimum': 0,
                'description': 'The simple_certificate plugin finds the '
                               'authority unavailable on the first N tries '
                               'of each step (a demonstration of R-2).'},
            _ISSUED: {
                # Refused as input: a new order that claimed it would
                # skip the authority's status check.
                'const': False,
                'description': 'Written by process_type_order when the '
                               'plugin issued at once: an output, never '
                               'input.'},
        },
        # Open: the type passes the metadata to whichever plugin is
        # configured, which reads keys of its own (the request's "cn" or
        # "domain" in the unit tests, the recording test plugin's
        # "hold_seconds" in the functional and chaos tests); the type
        # cannot know them, so it types only the keys it or the default
        # plugin reads.
        'additionalProperties': True,
    }

    def __init__(self, plugin):
        self._plugin = plugin

    @classmethod
    def build(cls, conf):
        """An instance over the configured certificate plugin."""
        plugin_class = plugins.load_class(conf.worker.certificate_plugin)
        return cls(plugins.instantiate(plugin_class, conf))

    def process_type_order(self, order):
        """Ask the certificate authority to issue the certificate.

        A plugin answers ``RetryLater(delay,
        method='check_certificate_status')`` to say "issued; check after
        delay": the request step is then done, and the status check starts
        after the delay.
        """
        result = self._plugin.issue_certificate_request(order)
        if isinstance(result, results.RetryLater):
            if result.method in (None, 'process_type_order'):
                return results.RetryLater(result.delay_seconds)
            if result.method == 'check_certificate_status':
                return results.Completed(
                    then_after_seconds=result.delay_seconds)
            return results.Failed(
                'certificate plugin asked for unknown step %r'
                % result.method)
        if isinstance(result, results.Completed):
            # Issued at once: the status check has nothing to ask.
            return results.Completed(dict(result.meta, **{_ISSUED: True}))
        return result

    def check_certificate_status(self, order):
        """Poll the certificate authority until the certificate is issued.

        Not asked at all when the request was issued at once, nor once
        the signal ``certificate.issued`` came: its id and payload are
        the step's output (``issued_by_signal``).
        """
        if order.meta.get(_ISSUED):
            return results.Completed()
        signal = order.signal(ISSUED_SIGNAL)
        if signal is not None:
            return results.Completed({_SIGNALLED: {
                'signal_id': signal.signal_id, 'payload': signal.payload}})
        result = self._plugin.check_certificate_status(order)
        if isinstance(result, results.RetryLater) and \
                result.method not in (None, 'check_certificate_status'):
            return results.Failed(
                'certificate plugin asked for unknown step %r'
                % result.method)
        return result
