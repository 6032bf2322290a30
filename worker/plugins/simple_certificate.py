"""SimpleCertificatePlugin: the demonstration plugin of the blueprint (NF-3).

``issue_certificate_request`` asks to be called back through
``check_certificate_status`` after ``delay_before_update_seconds``, which
then completes the order. An order whose metadata holds
``"unavailable_attempts": N`` finds the remote CA unavailable on the first
N tries of each step, to demonstrate R-2 (retry with back-off).
"""

from worker.plugins import base


class SimpleCertificatePlugin(base.CertificatePluginBase):
    """A certificate authority that answers after a fixed delay."""

    option_group = 'simple_certificate'
    option_names = ('delay_before_update_seconds',)

    def __init__(self, delay_before_update_seconds=5):
        self.delay_before_update_seconds = delay_before_update_seconds

    @staticmethod
    def _unavailable(order):
        return order.attempt < int(order.meta.get('unavailable_attempts', 0))

    def issue_certificate_request(self, order):
        """Request the certificate; ask to check its status later."""
        if self._unavailable(order):
            return base.RemoteUnavailable('simple CA unavailable (demo)')
        return base.RetryLater(self.delay_before_update_seconds,
                               method='check_certificate_status')

    def check_certificate_status(self, order):
        """Report the certificate issued."""
        if self._unavailable(order):
            return base.RemoteUnavailable('simple CA unavailable (demo)')
        return base.Completed({'certificate': 'simple-%s' % order.id})
