"""A certificate plugin and an order type for tests: recorded and slowed.

They are registered for test processes only (see
``tests/functional/processes.py: plugin_environment``): the certificate
plugin ``recording`` and the order type ``recording_fanout`` (the fanout
workflow, each call recorded with its step's idempotency key, as a remote
service counting distinct keys would see them). Every call appends one
JSON line to the file named by ``BARBICAN_RETRY_TEST_PLUGIN_LOG``: the
order, the step, the token it ran under and when it started and ended.
An order whose metadata holds ``"hold_seconds": S`` makes its first
``issue_certificate_request`` (token 1) take S seconds, so a test can kill
a worker in the middle of a step and see the order finish after it is
taken back.
"""

import json
import os
import time

from worker.order_types import fanout
from worker.plugins import simple_certificate

LOG_VARIABLE = 'BARBICAN_RETRY_TEST_PLUGIN_LOG'


class RecordingPlugin(simple_certificate.SimpleCertificatePlugin):
    """SimpleCertificatePlugin that logs its calls and can be held."""

    def _record(self, order, step, call):
        started = time.time()
        if step == 'issue_certificate_request' and order.token == 1:
            time.sleep(float(order.meta.get('hold_seconds', 0)))
        result = call(order)
        _append({'order': order.id, 'step': step, 'token': order.token,
                 'started': started, 'ended': time.time(),
                 'result': type(result).__name__})
        return result

    def issue_certificate_request(self, order):
        """Issue, after holding for ``hold_seconds``."""
        return self._record(order, 'issue_certificate_request',
                            super().issue_certificate_request)

    def check_certificate_status(self, order):
        """Check, recorded."""
        return self._record(order, 'check_certificate_status',
                            super().check_certificate_status)


def _append(line):
    path = os.environ.get(LOG_VARIABLE)
    if path:
        with open(path, 'a') as log:
            log.write(json.dumps(line) + '\n')


class RecordingFanout(fanout.FanoutOrder):
    """The fanout order type, every run recorded, one step holdable.

    An order whose metadata holds ``"hold_seconds": S`` makes the first
    run (token 1) of its step ``"hold_step"`` (default ``issue``) take S
    seconds: a test kills its worker then, or lets its lease run out.
    Each line has ``order``, ``step``, ``key`` (the idempotency key),
    ``token``, ``started``, ``ended`` and ``result``.
    """

    meta_schema = dict(fanout.FanoutOrder.meta_schema, properties=dict(
        fanout.FanoutOrder.meta_schema['properties'],
        hold_seconds={'type': 'number', 'minimum': 0},
        hold_step={'enum': [step.name for step in
                            fanout.FanoutOrder.steps +
                            (fanout.FanoutOrder.compensation,)]}))

    def run(self, step, order):
        """Run ``step``, held if asked, and record it."""
        started = time.time()
        if step == order.meta.get('hold_step', 'issue') and \
                order.token == 1:
            time.sleep(float(order.meta.get('hold_seconds', 0)))
        result = super().run(step, order)
        _append({'order': order.id, 'step': step,
                 'key': order.idempotency_key, 'token': order.token,
                 'started': started, 'ended': time.time(),
                 'result': type(result).__name__})
        return result


def read_log(path):
    """Return the recorded calls, oldest first."""
    if not os.path.exists(path):
        return []
    with open(path) as log:
        return [json.loads(line) for line in log if line.strip()]
