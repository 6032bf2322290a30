"""A certificate plugin for tests: the simple plugin, recorded and slowed.

It is registered for test processes only (see
``tests/functional/processes.py: plugin_environment``), under the name
``recording``. Every call appends one JSON line to the file named by
``BARBICAN_RETRY_TEST_PLUGIN_LOG``: the order, the step, the token it ran
under and when it started and ended. An order whose metadata holds
``"hold_seconds": S`` makes its first ``issue_certificate_request`` (token
1) take S seconds, so a test can kill a worker in the middle of a step and
see the order finish after it is taken back.
"""

import json
import os
import time

from worker.plugins import simple_certificate

LOG_VARIABLE = 'BARBICAN_RETRY_TEST_PLUGIN_LOG'


class RecordingPlugin(simple_certificate.SimpleCertificatePlugin):
    """SimpleCertificatePlugin that logs its calls and can be held."""

    def _record(self, order, step, call):
        started = time.time()
        if step == 'issue_certificate_request' and order.token == 1:
            time.sleep(float(order.meta.get('hold_seconds', 0)))
        result = call(order)
        path = os.environ.get(LOG_VARIABLE)
        if path:
            line = json.dumps({'order': order.id, 'step': step,
                               'token': order.token, 'started': started,
                               'ended': time.time(),
                               'result': type(result).__name__})
            with open(path, 'a') as log:
                log.write(line + '\n')
        return result

    def issue_certificate_request(self, order):
        """Issue, after holding for ``hold_seconds``."""
        return self._record(order, 'issue_certificate_request',
                            super().issue_certificate_request)

    def check_certificate_status(self, order):
        """Check, recorded."""
        return self._record(order, 'check_certificate_status',
                            super().check_certificate_status)


def read_log(path):
    """Return the recorded calls, oldest first."""
    if not os.path.exists(path):
        return []
    with open(path) as log:
        return [json.loads(line) for line in log if line.strip()]
