"""The worker's RPC endpoints: take messages of steps, run each step.

A message carries one step (``process_type_order``, as a 1.0 client casts
it) or several (``run_steps``). Its malformed steps are dropped; each of
the others is handed to a step thread, where it lives three moves
(``worker.steps``):

1. Claim (``worker.steps.claim``): move the step's generation from the
   one the message carries to the next (the run's token), and take a
   lease on it. A step whose generation is stale claims nothing and is
   dropped.
2. Run, outside any transaction: its kind's (``worker.steps.kinds``)
   precheck and the order type's step, or a delivery's requests; alone in
   this process if the step's process died running it before
   (``worker.steps.isolation``).
3. Apply (``worker.steps.apply``): its result decided as writes, each
   conditional on the token taken in step 1; the steps it made ready are
   cast once it committed, but those claimed in the same transaction to
   run here (``worker.steps.continuation``), when this process has room:
   the thread goes on with its move 2, with no message and no claim of
   its own.

Claims and applies are written in batches (``worker.common.group_commit``).
A step that is stale, or whose result is superseded, costs only itself.

A step's thread logs with its order's request ids (``worker.context``):
those its message carried for the order, then, once claimed, those of
the order's row.
"""

import concurrent.futures
import reprlib
import threading

from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_utils import timeutils

from worker.common import group_commit
from worker import context
from worker.notifications import sender as sender_module
from worker.notifications import traced
from worker import rpc
from worker import rpcapi
from worker.steps import apply as apply_module
from worker.steps import claim as claim_module
from worker.steps import continuation
from worker.steps import isolation
from worker.steps import kinds
from worker.steps import runner
from worker import tracing
from worker import values

LOG = logging.getLogger(__name__)


class WorkerManager:
    """RPC endpoint of the worker pool.

    Only the methods marked ``@messaging.expose`` are served (see
    ``worker.rpc.get_server``).

    :param service_name: this process's name (``pid@host``), recorded as
        the owner of the steps it runs.
    :param worker_api: a ``worker.rpcapi.WorkerAPI`` on the workers' own
        topic, to cast the steps a result makes ready; None leaves them to
        the retry scheduler's recovery.
    :param clock: returns the current UTC time (naive); a parameter so
        tests control time.
    :param observe_result: called with each step's result (``done``,
        ``active``, ``error``, ``retry``, ``cancelled``, ``stale``,
        ``superseded``; a delivery's ``delivered``, ``retry``,
        ``paused``), or None.
    :param observe_delivery: called with the events a delivery run sent
        and whether a request failed, or None.
    :param sender: posts one event (``worker.notifications.sender``); a
        parameter so tests replace the network.
    :param announcer: a ``worker.notifications.bus.Announcer`` for the orders
        the results end, or None.
    :param topic: the topic this process serves: the steps made ready
        that are cast to it may be continued here
        (``worker.steps.continuation``); None continues none.
    :param intake: the ``worker.intake.Room`` of the steps this process
        received and has not started, or None.
    :param observe_continued: called with the number of steps continued
        here after a batch of results, or None.
    """

    target = messaging.Target(version=rpc.RPC_API_VERSION)

    def __init__(self, conf, database, service_name, worker_api=None,
                 clock=timeutils.utcnow, observe_result=None,
                 step_concurrency=1, observe_delivery=None, sender=None,
                 announcer=None, topic=None, intake=None,
                 observe_continued=None):
        observe_result = observe_result or (lambda result: None)
        sender = sender or sender_module.Sender(conf)
        if tracing.ENABLED:
            sender = traced.TracedSender(sender)
        # The steps of a run_steps message run here, as many at once as a
        # process runs messages: a message is a way to carry steps, not an
        # order in which to run them.
        self._steps = concurrent.futures.ThreadPoolExecutor(
            max_workers=step_concurrency, thread_name_prefix='step')
        self._free_threads = threading.BoundedSemaphore(step_concurrency)
        self._isolation = isolation.Isolation(conf.worker.max_step_crashes,
                                              conf.report_interval)
        step_kinds = kinds.Kinds(
            conf, database, clock, sender,
            observe_delivery or (lambda sent, failed: None))
        self._claimer = claim_module.Claimer(
            database, step_kinds, service_name, clock, observe_result,
            self._isolation)
        self._continuer = None
        if topic is not None and worker_api is not None:
            self._continuer = continuation.Continuer(
                conf, self._claimer, topic, worker_api.topic,
                self._free_threads, intake, observe_continued)
        self._applier = apply_module.Applier(database, clock, worker_api,
                                             observe_result, _MAX_BATCH,
                                             announcer=announcer,
                                             continuer=self._continuer)
        # Claims and results are written in batches: those of the steps
        # that reach the database while a batch is being written go
        # together in the next.
        self._claim = group_commit.GroupCommit(self._claimer.claim_batch,
                                               _MAX_BATCH)
        self._apply = group_commit.GroupCommit(self._applier.apply_batch,
                                               _MAX_BATCH)
        self._runner = runner.StepRunner(
            self._steps, self._free_threads, self._isolation, self._claimer,
            self._applier, self._claim, self._apply)

    @messaging.expose
    def process_type_order(self, ctxt, order_id, generation):
        """Run the first step of a certificate order (RPC 1.0)."""
        self.run_steps(ctxt, [['process_type_order', order_id, generation]])

    @messaging.expose
    def check_certificate_status(self, ctxt, order_id, generation):
        """Run the status check of a certificate order (RPC 1.0)."""
        self.run_steps(ctxt, [['check_certificate_status', order_id,
                               generation]])

    @messaging.expose
    def run_steps(self, ctxt, steps):
        """Several steps in one message (RPC 1.1).

        The malformed steps are dropped; the others run concurrently, each
        under its own claim, which drops it if its generation is stale. The
        message returns when its steps are done, so a busy process takes
        no more messages than it can run.

        :param ctxt: a ``worker.context.StepsContext`` (anything else
            carries no request ids).
        :param steps: ``[[step, order_id, generation], ...]``.
        """
        if not isinstance(ctxt, context.StepsContext):
            ctxt = None
        # The lines about the message itself carry its sender's ids.
        with context.current(ctxt):
            self._run_message(ctxt, steps)

    def _run_message(self, ctxt, steps):
        if isinstance(steps, list) and \
                len(steps) > rpcapi.MAX_STEPS_PER_MESSAGE:
            LOG.error('Dropped a message of %d steps: no sender of ours '
                      'puts more than %d in one', len(steps),
                      rpcapi.MAX_STEPS_PER_MESSAGE)
            return
        outstanding = _Outstanding()
        for step in self._well_formed(steps, ctxt):
            # A step is handed to the step threads only when one is free:
            # the steps waiting for one stay in their message, a few bytes
            # each, not queued as futures (a lock and a condition each,
            # 1,600 of them for 32 messages of 50 steps).
            self._free_threads.acquire()
            try:
                future = self._steps.submit(self._runner.run_step, step, ctxt)
            except RuntimeError:
                # The service is stopping (cancel_queued_steps): the rest
                # were never claimed; the retry daemon dispatches them
                # again once their dispatch deadline passes.
                self._free_threads.release()
                break
            outstanding.add()
            future.add_done_callback(self._step_ended(outstanding))
        outstanding.wait()

    def _step_ended(self, outstanding):
        """The callback of a step's future: run, or cancelled."""
        def ended(_future):
            self._free_threads.release()
            outstanding.done()
        return ended

    def cancel_queued_steps(self):
        """Give up the steps not started yet (the service is stopping).

        Those of messages were never claimed: the retry daemon dispatches
        them again once their dispatch deadline passes. Those an apply
        claimed here to continue are given back
        (``worker.steps.runner``). The steps running go on, but continue
        no other here.
        """
        self._runner.stop()
        if self._continuer is not None:
            self._continuer.stop()
        self._steps.shutdown(wait=False, cancel_futures=True)

    def wait_for_steps(self):
        """Return once every step running here has ended, those continued
        on step threads of their own too (``cancel_queued_steps`` first).

        The server's ``wait`` waits for the steps of its messages only;
        a continued step cut short when the process exits would be
        recovered as a crash, once its owner's heartbeat is gone.
        """
        self._steps.shutdown(wait=True)

    def _well_formed(self, steps, ctxt):
        """The steps of a message that are ``[step, order_id, token]``,
        with the request ids ``ctxt`` carries for their orders.

        NOTE: whether a generation is stale is the claim's question: a read
        here first would cost every step a transaction of its own, about
        a quarter of a worker's CPU, to spare the claim's batch a step
        that it drops at no cost.
        """
        wanted, malformed = [], []
        for step in steps if isinstance(steps, list) else [steps]:
            try:
                name, order_id, generation = step
                if not (isinstance(name, str) and
                        isinstance(order_id, str) and
                        rpc.is_generation(generation)):
                    raise TypeError('wrong types')
            except (TypeError, ValueError) as exc:
                malformed.append((step, exc))
                continue
            step = values.StepRef(
                name, order_id, generation,
                ctxt.ids_of(order_id) if ctxt is not None else None)
            if tracing.ENABLED and ctxt is not None:
                step = step._replace(trace=ctxt.trace_of(order_id))
            wanted.append(step)
        if malformed:
            # One line per message, of bounded length: a message of
            # thousands of bad steps (or of one huge one) is one line.
            step, exc = malformed[0]
            LOG.error('Dropped %d malformed step(s) of a message; the '
                      'first: %s (%s)', len(malformed), _BOUNDED.repr(step),
                      exc)
        return wanted

    def apply_deferred_results(self):
        """Write again the results that the database refused (an outage).

        Called every ``report_interval`` by the service
        (``worker.steps.apply.Applier.apply_deferred_results``).
        """
        self._applier.apply_deferred_results()


#: The most claims or results written in one transaction, and steps cast
#: in one message (the retry daemon's default ``rows_per_cast``).
_MAX_BATCH = 50


class _Outstanding:
    """The steps of one message handed to the step threads and not ended.
    """

    def __init__(self):
        self._count = 0
        self._lock = threading.Lock()
        self._none = threading.Event()
        self._none.set()

    def add(self):
        """One more step handed over."""
        with self._lock:
            self._count += 1
            self._none.clear()

    def done(self):
        """One step ended (run or cancelled)."""
        with self._lock:
            self._count -= 1
            if not self._count:
                self._none.set()

    def wait(self):
        """Return once every step handed over has ended."""
        self._none.wait()


# Reprs of hostile input, cut short for the log.
_BOUNDED = reprlib.Repr()
_BOUNDED.maxstring = _BOUNDED.maxother = 120
