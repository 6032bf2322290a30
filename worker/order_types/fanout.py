"""The ``fanout`` order type: a demonstration of steps in parallel.

A multi-domain certificate, as ``seeds/001`` describes a status-driven
workflow::

    check_domains ─┐
    check_caa ─────┼─> issue ─> poll ─┬─> store
    check_key ─────┘                  └─> notify

The three checks run at the same time, possibly on different worker
processes; ``issue`` runs once all three are DONE; ``poll`` asks the
(simulated) certificate authority until the certificate is ready; then
``store`` and ``notify`` run in parallel and the order turns ACTIVE.
``revoke`` is the compensation step run when an order is cancelled.

Its remote side is simulated from the order's metadata:
``"unavailable_attempts": N`` makes each step find it unavailable N times,
``"polls": N`` makes ``poll`` answer "not yet" N times. Its
``meta_schema`` allows these two keys only.
"""

from oslo_config import cfg

from worker.order_types import base
from worker.plugins import base as results
from worker import policy

# The remote checks are quick and idempotent: any unexpected error retries.
_CHECK = policy.StepPolicy(retry_on=(policy.ANY_EXCEPTION,),
                           backoff=policy.EXPONENTIAL,
                           backoff_base_seconds=1.0,
                           backoff_max_seconds=60.0, max_attempts=5,
                           timeout_seconds=60.0)


class FanoutOrder(base.OrderType):
    """Check three things in parallel, issue, poll, then store and notify."""

    steps = (
        base.Step('check_domains', policy=_CHECK),
        base.Step('check_caa', policy=_CHECK),
        base.Step('check_key', policy=_CHECK),
        base.Step('issue', after=('check_domains', 'check_caa',
                                  'check_key'),
                  policy=policy.StepPolicy(max_attempts=8,
                                           timeout_seconds=120.0)),
        base.Step('poll', after=('issue',),
                  policy=policy.StepPolicy(max_polls=100,
                                           deadline_seconds=86400.0)),
        base.Step('store', after=('poll',), policy=_CHECK),
        base.Step('notify', after=('poll',), policy=_CHECK),
    )
    compensation = base.Step('revoke', policy=_CHECK)
    option_group = 'fanout'
    options = (
        cfg.FloatOpt('poll_interval_seconds',
                     default=1.0, min=0.0, max=86400.0, mutable=True,
                     help='Seconds between the issue step and the first '
                          'poll, and between polls, of a fanout order.'),
    )

    meta_schema = {
        'type': 'object',
        'properties': {
            'unavailable_attempts': {
                'type': 'integer', 'minimum': 0,
                'description': 'Each step finds the simulated authority '
                               'unavailable on its first N runs.'},
            'polls': {
                'type': 'integer', 'minimum': 0,
                'description': 'poll answers "not yet" N times.'},
        },
        # Closed: these two keys are all the simulation reads, so any
        # other key is a mistake ("poll" for "polls") that would be
        # silently ignored. Nothing creates fanout orders with other keys
        # (the outputs its steps merge in are not input); a subclass that
        # reads more, as the tests' recording_fanout does, extends it.
        'additionalProperties': False,
    }

    def __init__(self, poll_interval_seconds=1.0):
        self.poll_interval_seconds = poll_interval_seconds

    @staticmethod
    def _unavailable(order):
        if order.attempt < int(order.meta.get('unavailable_attempts', 0)):
            return results.RemoteUnavailable(
                '%s: remote service unavailable (demo)' % order.step)
        return None

    def _check(self, order, what):
        return self._unavailable(order) or results.Completed(
            {what: 'ok'})

    def check_domains(self, order):
        """Check that every domain of the request may be certified."""
        return self._check(order, 'domains_checked')

    def check_caa(self, order):
        """Check the domains' CAA records allow this authority."""
        return self._check(order, 'caa_checked')

    def check_key(self, order):
        """Check the public key of the request."""
        return self._check(order, 'key_checked')

    def issue(self, order):
        """Ask the authority to issue, under the step's idempotency key."""
        return self._unavailable(order) or results.Completed(
            {'request': order.idempotency_key},
            then_after_seconds=self.poll_interval_seconds)

    def poll(self, order):
        """Ask the authority whether the certificate is ready."""
        if order.polls < int(order.meta.get('polls', 0)):
            return results.RetryLater(self.poll_interval_seconds)
        return self._unavailable(order) or results.Completed(
            {'certificate': 'fanout-%s' % order.id})

    def store(self, order):
        """Store the certificate."""
        return self._check(order, 'stored')

    def notify(self, order):
        """Tell the requester the certificate is ready."""
        return self._check(order, 'notified')

    def revoke(self, order):
        """Undo what was done: revoke the request if it was issued."""
        return results.Completed(
            {'revoked': order.steps.get('issue') == 'DONE'})
