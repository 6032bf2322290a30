"""A certificate plugin and order types for tests: recorded and slowed.

They are registered for test processes only (see
``tests/functional/processes.py: plugin_environment``): the certificate
plugin ``recording``, the order type ``remote_call`` (``RemoteCall``: one
step that calls a fake remote service under a resource key) and the order
type ``recording_fanout`` (the fanout
workflow, each call recorded with its step's idempotency key, as a remote
service counting distinct keys would see them) and the order type
``single_step`` (one step, not recorded: a burst of orders costs the
workers one step each). Every call appends one
JSON line to the file named by ``BARBICAN_RETRY_TEST_PLUGIN_LOG``: the
order, the step, the token it ran under and when it started and ended.
An order whose metadata holds ``"hold_seconds": S`` makes its first
``issue_certificate_request`` (token 1) take S seconds, so a test can kill
a worker in the middle of a step and see the order finish after it is
taken back (or until the file named by ``"release_file"`` exists, if
sooner); with ``"extend_lease_seconds": E`` as well, the held run
extends its lease to E seconds every E/3 seconds while it holds. An
order whose metadata holds ``"kill_worker": true`` is a poison order:
every run of that step kills its own worker process with SIGKILL (a
line with the result ``killed`` is recorded first).

The order type ``sleeping`` (``SleepingOrder``) has one slow step: the
type a test gives a topic of its own.

The order type ``recording_limited`` (``RecordingLimited``) holds one
slot of the resource key ``chaos:<meta key>`` while its step ``call``
runs, as a step calling a remote service that allows a few calls at once
would; its runs are recorded the same way, so that a chaos run can count
how many ran at once on each key.
"""

import json
import os
import signal
import time
import urllib.parse
import urllib.request

from worker.order_types import base as types_base
from worker.order_types import fanout
from worker.plugins import base as results
from worker.plugins import simple_certificate
from worker import policy

LOG_VARIABLE = 'BARBICAN_RETRY_TEST_PLUGIN_LOG'


class RecordingPlugin(simple_certificate.SimpleCertificatePlugin):
    """SimpleCertificatePlugin that logs its calls and can be held."""

    def _record(self, order, step, call):
        started = time.time()
        if step == 'issue_certificate_request':
            _kill_if_poison(order, step)
            if order.token == 1:
                _hold(order)
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
        """Check, recorded; with ``poll_seconds`` in the order's meta, the
        authority answers "not yet, ask again after poll_seconds"."""
        return self._record(order, 'check_certificate_status',
                            self._check_or_poll)

    def _check_or_poll(self, order):
        if 'poll_seconds' in order.meta:
            return results.RetryLater(float(order.meta['poll_seconds']))
        return super().check_certificate_status(order)


def _hold(order):
    """Sleep ``hold_seconds``, extending the lease if asked to; sooner,
    as soon as the file named by ``release_file`` (if any) exists: the
    test's event, however long it took to come."""
    until = time.monotonic() + float(order.meta.get('hold_seconds', 0))
    extension = order.meta.get('extend_lease_seconds')
    release = order.meta.get('release_file')
    while (left := until - time.monotonic()) > 0:
        if release and os.path.exists(release):
            return
        if extension:
            order.extend_lease(extension)
            left = min(left, extension / 3)
        time.sleep(min(left, 0.1) if release else left)


def _kill_if_poison(order, step):
    """A poison order's run kills its own process, every time."""
    if order.meta.get('kill_worker'):
        _append({'order': order.id, 'step': step,
                 'key': order.idempotency_key, 'token': order.token,
                 'started': time.time(), 'ended': time.time(),
                 'result': 'killed', 'pid': os.getpid()})
        os.kill(os.getpid(), signal.SIGKILL)


def _append(line):
    path = os.environ.get(LOG_VARIABLE)
    if path:
        with open(path, 'a') as log:
            log.write(json.dumps(line) + '\n')


_STEP_NAMES = [step.name for step in fanout.FanoutOrder.steps +
               (fanout.FanoutOrder.compensation,)]


def _runs_of(order_id, step):
    """How many runs of ``step`` of the order the log has."""
    path = os.environ.get(LOG_VARIABLE)
    return sum(call['order'] == order_id and call['step'] == step
               for call in read_log(path)) if path else 0


class RecordingFanout(fanout.FanoutOrder):
    """The fanout order type, every run recorded, one step holdable.

    An order whose metadata holds ``"hold_seconds": S`` makes the first
    run (token 1) of its step ``"hold_step"`` (default ``issue``) take S
    seconds (or until the file ``"release_file"`` names exists): a test
    kills its worker then, or lets its lease run out.
    ``"fail_step": STEP, "fail_runs": N`` make the first N runs of STEP
    fail for good (``Failed``: the order goes to ERROR), as a remote side
    that refused the first N requests would; the runs are counted in the
    log, so that they go on counting after the order is resumed.
    Each line has ``order``, ``step``, ``key`` (the idempotency key),
    ``token``, ``started``, ``ended`` and ``result``.
    """

    meta_schema = dict(fanout.FanoutOrder.meta_schema, properties=dict(
        fanout.FanoutOrder.meta_schema['properties'],
        hold_seconds={'type': 'number', 'minimum': 0},
        release_file={'type': 'string'},
        extend_lease_seconds={'type': 'number', 'exclusiveMinimum': 0},
        kill_worker={'type': 'boolean'},
        hold_step={'enum': _STEP_NAMES},
        fail_step={'enum': _STEP_NAMES},
        fail_runs={'type': 'integer', 'minimum': 0}))

    def run(self, step, order):
        """Run ``step``, held if asked, and record it."""
        started = time.time()
        if step == order.meta.get('hold_step', 'issue'):
            _kill_if_poison(order, step)
            if order.token == 1:
                _hold(order)
        if step == order.meta.get('fail_step') and _runs_of(
                order.id, step) < int(order.meta.get('fail_runs', 0)):
            result = results.Failed('%s: refused by the authority (test)'
                                    % step)
        else:
            result = super().run(step, order)
        _append({'order': order.id, 'step': step,
                 'key': order.idempotency_key, 'token': order.token,
                 'started': started, 'ended': time.time(),
                 'result': type(result).__name__})
        return result


class SleepingOrder(types_base.OrderType):
    """One step, ``sleep``, that sleeps ``"seconds"`` (of the order's
    metadata): the slow work that must not hold the step threads of other
    types. With ``"poll_once": true`` its first run asks to be run again
    (``RetryLater``) a moment later, through the retry daemon. Each run is
    recorded as ``RecordingFanout``'s are.
    """

    steps = (types_base.Step('sleep'),)
    meta_schema = {
        'type': 'object',
        'properties': {'seconds': {'type': 'number', 'minimum': 0},
                       'poll_once': {'type': 'boolean'}},
        'additionalProperties': False,
    }

    def sleep(self, order):
        """Sleep, or ask to be polled once first."""
        started = time.time()
        if order.meta.get('poll_once') and order.polls == 0:
            result = results.RetryLater(0.2)
        else:
            time.sleep(float(order.meta.get('seconds', 0)))
            result = results.Completed({'slept': True})
        _append({'order': order.id, 'step': 'sleep', 'token': order.token,
                 'started': started, 'ended': time.time(),
                 'result': type(result).__name__, 'pid': os.getpid()})
        return result


class RecordingLimited(types_base.OrderType):
    """One step that uses the resource key ``chaos:<meta key>``.

    Its run holds for ``hold_seconds`` (default 0.2) and records a line
    with ``resource``, the key it used; a second step, ``note``, runs
    after it with no resource. With ``[resource:chaos] capacity = N``, no
    two recorded runs of more than N at once may overlap on one key
    (``tests.chaos.checks.most_at_once``).
    """

    steps = (
        types_base.Step('call', resources=lambda order: (
            'chaos:' + order.meta['key'],)),
        types_base.Step('note', after=('call',)),
    )
    meta_schema = {
        'type': 'object',
        'properties': {'key': {'type': 'string', 'pattern': '^[a-z]{1,16}$'},
                       'hold_seconds': {'type': 'number', 'minimum': 0}},
        'required': ['key'],
    }

    def call(self, order):
        """Hold the slot a while, recorded with the key it used."""
        started = time.time()
        time.sleep(float(order.meta.get('hold_seconds', 0.2)))
        _append({'order': order.id, 'step': 'call',
                 'key': order.idempotency_key, 'token': order.token,
                 'resource': 'chaos:' + order.meta['key'],
                 'started': started, 'ended': time.time(),
                 'result': 'Completed'})
        return results.Completed()

    def note(self, order):
        """Nothing more to do."""
        return results.Completed()


def read_log(path):
    """Return the recorded calls, oldest first."""
    if not os.path.exists(path):
        return []
    with open(path) as log:
        return [json.loads(line) for line in log if line.strip()]


class RemoteCall(types_base.OrderType):
    """An order type of one step, ``call``, that calls a remote service
    (``tests/functional/remote.py``) and uses the resource key its order
    names.

    Its metadata: ``url`` (the service), ``key`` (the resource key, and
    what the service counts calls by) and ``hold_seconds`` (how long each
    call takes at the service).
    """

    meta_schema = {
        'type': 'object',
        'properties': {'url': {'type': 'string'},
                       'key': {'type': 'string'},
                       'hold_seconds': {'type': 'number', 'minimum': 0}},
        'required': ['url', 'key']}
    steps = (types_base.Step(
        'call', resources=lambda order: (order.meta['key'],),
        policy=policy.StepPolicy(
            retry_on=('*',), backoff_base_seconds=0.2,
            backoff_max_seconds=1, max_attempts=5)),)

    def call(self, order):
        """Call the service once with the order's key; done."""
        query = urllib.parse.urlencode({
            'key': order.meta['key'], 'order': order.id,
            'hold': order.meta.get('hold_seconds', 0)})
        with urllib.request.urlopen('%s?%s' % (order.meta['url'], query),
                                    timeout=30) as response:
            response.read()
        return results.Completed()


class SingleStep(types_base.OrderType):
    """An order type of one step, which completes at once.

    Not recorded: the burst benchmark and the flow-control tests create
    thousands of them. ``"hold_seconds": S`` in an order's metadata makes
    its step take S seconds (every run), so that a worker's steps are
    held while the broker keeps the rest.
    """

    steps = (types_base.Step('issue'),)
    meta_schema = {'type': 'object', 'properties': {
        'hold_seconds': {'type': 'number', 'minimum': 0}}}

    def issue(self, order):
        """Done, after ``hold_seconds``."""
        time.sleep(float(order.meta.get('hold_seconds', 0)))
        return results.Completed()


#: Set in a process's environment: the ``growing`` order type has gained
#: its step ``third`` there (``Growing``).
GROWN_VARIABLE = 'BARBICAN_RETRY_TEST_GROWN'


class Growing(types_base.OrderType):
    """An order type that gains a step in a new release: ``first``, then
    ``second``; where ``BARBICAN_RETRY_TEST_GROWN`` is set, ``third``
    after ``first`` too, the graph before kept for the orders created
    with it.

    ``first`` waits (at most 60 s) until the file its order's ``"gate"``
    names exists, so that a test ends many runs at one moment and their
    results are written in the same batches. ``third`` takes its order's
    ``"hold_seconds"``: made ready with ``second``, it is the one a worker
    continues on a step thread of its own (``second`` goes on in the
    thread of ``first``).
    """

    steps = (types_base.Step('first'),
             types_base.Step('second', after=('first',)))
    if os.environ.get(GROWN_VARIABLE):
        # The orders created before finish on the graph they began with.
        previous_workflows = (types_base.PreviousWorkflow(steps),)
        steps += (types_base.Step('third', after=('first',)),)

    def first(self, order):
        """Done once the gate is open; its output cannot be written (not
        JSON) if its order's ``"unwritable"`` says so."""
        gate = order.meta.get('gate')
        until = time.monotonic() + 60
        while gate and not os.path.exists(gate) and \
                time.monotonic() < until:
            time.sleep(0.02)
        if order.meta.get('unwritable'):
            return results.Completed({'unwritable': object()})
        return results.Completed()

    def second(self, order):
        """Done."""
        return results.Completed()

    def third(self, order):
        """Done, after ``hold_seconds``."""
        time.sleep(float(order.meta.get('hold_seconds', 0)))
        return results.Completed()


#: Set in a process's environment: the ``changing`` order type is its new
#: release there (``Changing``).
CHANGED_VARIABLE = 'BARBICAN_RETRY_TEST_CHANGED'

#: ``Changing``'s graph before: ``fetch`` becomes ``collect``, ``dropped``
#: goes and ``added`` comes in the new one.
CHANGING_BEFORE = (types_base.Step('prepare'),
                   types_base.Step('dropped', after=('prepare',)),
                   types_base.Step('fetch', after=('prepare',)))
CHANGING_AFTER = (types_base.Step('prepare'),
                  types_base.Step('collect', after=('prepare',)),
                  types_base.Step('added', after=('prepare',)))


class Changing(types_base.OrderType):
    """An order type whose new release (``BARBICAN_RETRY_TEST_CHANGED``
    set) renames a step (``fetch`` to ``collect``), removes one
    (``dropped``) and adds one (``added``), keeping its graph before for
    the orders created with it. Each step takes its order's
    ``"hold_seconds"`` (0.2 by default), and records its output under its
    own name, so that a test reads which graph an order ran.
    """

    steps = CHANGING_BEFORE
    if os.environ.get(CHANGED_VARIABLE):
        steps = CHANGING_AFTER
        previous_workflows = (types_base.PreviousWorkflow(CHANGING_BEFORE),)

    @staticmethod
    def _step(order, name):
        time.sleep(float(order.meta.get('hold_seconds', 0.2)))
        return results.Completed({'ran_' + name: True})

    def prepare(self, order):
        """Done after the hold."""
        return self._step(order, 'prepare')

    def collect(self, order):
        """Done after the hold; ``fetch`` of the graph before."""
        return self._step(order, order.step)

    fetch = collect

    def dropped(self, order):
        """Done after the hold; kept for the orders of the graph before.
        """
        return self._step(order, 'dropped')

    def added(self, order):
        """Done after the hold."""
        return self._step(order, 'added')
