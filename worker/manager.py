"""The worker's RPC endpoints: run steps of orders, fenced.

A message carries one step (``process_type_order``, as a 1.0 client casts
it) or several (``run_steps``). Its malformed steps are dropped; each of
the others is three moves:

1. Claim: move the step's generation from the token the message carries
   to the next one, and take a lease on it for the step policy's
   ``timeout_seconds``. A step whose token is stale (a duplicate, or one
   overtaken by later work) claims nothing and is dropped.
2. Run the order type's step, outside any transaction. Steps are pure.
3. Apply: turn the step's answer into the new state of the step, of its
   order and of the steps after it (``worker.outcomes``). Every write is
   conditional on the token taken in step 1. The steps it made ready are
   cast once it committed.

Claims and applies are written in batches (``worker.group_commit``): the
claims, or the results, of the steps that reach the database while a
batch is being written go together in the next one, each still fenced on
its own token. A step that is stale, or whose result is superseded, costs
only itself.
"""

import collections
import concurrent.futures
import datetime
import reprlib
import threading
import types

from oslo_db import api as oslo_db_api
from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_utils import timeutils

from worker.conf import order_types as type_options
from worker.db import models
from worker.db import session as db_session
from worker import delivery
from worker import group_commit
from worker.notifications import sender as sender_module
from worker import order_types
from worker import outcomes
from worker.plugins import base
from worker import policy as policy_module
from worker import result_plan
from worker import rpc
from worker import rpcapi

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
    """

    target = messaging.Target(version=rpc.RPC_API_VERSION)

    def __init__(self, conf, database, service_name, worker_api=None,
                 clock=timeutils.utcnow, observe_result=None,
                 step_concurrency=1, observe_delivery=None, sender=None):
        self._conf = conf
        self._database = database
        self._repositories = database.repositories
        self._service_name = service_name
        self._worker_api = worker_api
        self._clock = clock
        self._observe_result = observe_result or (lambda result: None)
        self._observe_delivery = observe_delivery or (
            lambda sent, failed: None)
        self._sender = sender or sender_module.Sender(conf)
        # The steps of a run_steps message run here, as many at once as a
        # process runs messages: a message is a way to carry steps, not an
        # order in which to run them.
        self._steps = concurrent.futures.ThreadPoolExecutor(
            max_workers=step_concurrency, thread_name_prefix='step')
        self._free_threads = threading.BoundedSemaphore(step_concurrency)
        # Claims and results are written in batches: those of the steps
        # that reach the database while a batch is being written go
        # together in the next.
        self._claim = group_commit.GroupCommit(self._claim_batch,
                                               _MAX_BATCH)
        self._apply = group_commit.GroupCommit(self._apply_batch,
                                               _MAX_BATCH)
        # Results the database refused: (run, result).
        self._deferred = []
        self._deferred_lock = threading.Lock()
        # A step's policy and its type's step_events, as configured: read
        # once per process. The configuration does not change under a
        # running manager: on SIGHUP the launcher takes the new files and
        # starts new worker processes. Reading them from oslo.config at
        # every claim was about 5 % of a worker's CPU per step.
        self._policies = {}
        self._step_events = {}

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
        under its own claim, which drops it if its token is stale. The
        message returns when its steps are done, so a busy process takes
        no more messages than it can run.

        :param steps: ``[[step, order_id, generation], ...]``.
        """
        if isinstance(steps, list) and \
                len(steps) > rpcapi.MAX_STEPS_PER_MESSAGE:
            LOG.error('Dropped a message of %d steps: no sender of ours '
                      'puts more than %d in one', len(steps),
                      rpcapi.MAX_STEPS_PER_MESSAGE)
            return
        outstanding = _Outstanding()
        for step in self._well_formed(steps):
            # A step is handed to the step threads only when one is free:
            # the steps waiting for one stay in their message, a few bytes
            # each, not queued as futures (a lock and a condition each,
            # 1,600 of them for 32 messages of 50 steps).
            self._free_threads.acquire()
            try:
                future = self._steps.submit(self._run_step, step)
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

        They were never claimed: the retry daemon dispatches them again
        once their dispatch deadline passes.
        """
        self._steps.shutdown(wait=False, cancel_futures=True)

    def _well_formed(self, steps):
        """The steps of a message that are ``[step, order_id, token]``.

        NOTE: whether a token is stale is the claim's question: a read
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
            wanted.append(rpcapi.Step(name, order_id, generation))
        if malformed:
            # One line per message, of bounded length: a message of
            # thousands of bad steps (or of one huge one) is one line.
            step, exc = malformed[0]
            LOG.error('Dropped %d malformed step(s) of a message; the '
                      'first: %s (%s)', len(malformed), _BOUNDED.repr(step),
                      exc)
        return wanted

    def _run_step(self, step):
        try:
            claimed = self._claim(step)
            if claimed is None:
                return
            run, view = claimed
            if run.delivery:
                result = self._deliver(run)
            else:
                result = self._precheck(run, view) or self._call(run, view)
        except Exception:
            # One step's trouble is its own; the others of its message go
            # on. A claim that failed took nothing.
            LOG.exception('Step %s of order %s failed', step.step,
                          step.order_id)
            return
        try:
            self._apply((run, result))
        except Exception:
            # The step is ours (claimed) until its lease ends: keep the
            # result and write it once the database answers again
            # (apply_deferred_results). Past the lease, the fencing
            # discards it.
            LOG.exception('Could not write the result of %s of order %s; '
                          'it is kept and written again every '
                          'report_interval', run.step, run.order_id)
            with self._deferred_lock:
                self._deferred.append((run, result))

    def _call(self, run, view):
        try:
            instance = order_types.instantiate(run.workflow, self._conf)
            return instance.run(run.step, view)
        except Exception as exc:
            LOG.exception('Step %s of order %s raised', run.step,
                          run.order_id)
            return outcomes.StepError.of(exc)

    def _deliver(self, run):
        """Send a delivery's next events (``worker.notifications``)."""
        lease_until = run.claimed_at + _seconds(run.policy.timeout_seconds)
        result = delivery.send(self._database, self._sender, self._conf, run,
                               lease_until, self._clock)
        if isinstance(result, delivery.Sent):
            if result.failure is not None:
                LOG.warning('Delivery %s of order %s: %s', run.step,
                            run.order_id, result.failure)
            self._observe_delivery(result.sent, result.failure is not None)
        return result

    def _precheck(self, run, view):
        """A result that ends the run before it starts, or None.

        A lost lease counts as a failed run that the retry scheduler took
        back: the policy may have run out; and deadlines pass while a step
        waits.
        """
        if view is None:
            return policy_module.GiveUp(
                'is not a step of order type %s' % run.workflow.type_name)
        now = self._clock()
        deadline = type_options.order_deadline_seconds(self._conf,
                                                       run.workflow)
        if deadline and not run.compensating and \
                run.order_created_at is not None and \
                (now - run.order_created_at).total_seconds() > deadline:
            return policy_module.GiveUp(
                'stopped: the order\'s deadline of %gs passed' % deadline)
        if run.failures >= run.policy.max_attempts:
            return policy_module.GiveUp(
                'gave up after %d attempts; last error: %s'
                % (run.failures, run.last_error))
        if policy_module.past_deadline(run.policy, run.started_at, now):
            return policy_module.GiveUp(
                'reached its deadline of %gs; last error: %s'
                % (run.policy.deadline_seconds, run.last_error))
        return None

    def apply_deferred_results(self):
        """Write again the results that the database refused (an outage).

        Called every ``report_interval`` by the service. A result still
        refused stays for the next call; one whose step moved on is
        discarded by the apply's fencing.
        """
        with self._deferred_lock:
            deferred, self._deferred = self._deferred, []
        if not deferred:
            return
        try:
            self._apply_batch(deferred)
        except Exception as exc:
            LOG.warning('%d result(s) still not written: %s', len(deferred),
                        exc)
            with self._deferred_lock:
                self._deferred.extend(deferred)
        else:
            LOG.info('%d result(s) written after the database came back',
                     len(deferred))

    def _drop(self, step, row):
        LOG.info('Dropped %s of order %s with stale token %d (step is %s)',
                 step.step, step.order_id, step.generation, _describe(row))
        self._observe_result(outcomes.STALE)

    # Lost races (deadlocks; on Galera, write sets refused at COMMIT) and
    # lost connections roll the transaction back whole, so running it
    # again is safe; the message was already acknowledged and would
    # otherwise be lost. A lost race is run again at once (the winner has
    # committed), a lost connection after a second or more.
    _db_retry = oslo_db_api.wrap_db_retry(
        max_retries=5, retry_on_disconnect=True, inc_retry_interval=True)

    def _claim_batch(self, steps):
        """Claim ``steps`` in one transaction (``GroupCommit``).

        :returns: per step, ``(Run, OrderView)``, or None if it was not
            claimed.
        """
        claimed, dropped = self._claim_in_a_transaction(steps)
        for step, row in dropped:
            # Logged after the transaction: a retried one logs once.
            self._drop(step, row)
        return claimed

    def _policy(self, workflow, step_name):
        """The policy of a step of ``workflow``, or of a delivery (no
        workflow)."""
        key = (workflow, None if workflow is None else step_name)
        found = self._policies.get(key)
        if found is None:
            found = self._policies[key] = (
                delivery.policy(self._conf) if workflow is None else
                type_options.step_policy(self._conf, workflow, step_name))
        return found

    def _events_of(self, workflow):
        """Whether orders of ``workflow`` notify each step's end."""
        found = self._step_events.get(workflow)
        if found is None:
            found = self._step_events[workflow] = type_options.step_events(
                self._conf, workflow)
        return found

    @_db_retry
    @db_session.retry_lost_race
    def _claim_in_a_transaction(self, steps):
        repositories = self._repositories
        now = self._clock()
        answers = [None] * len(steps)
        dropped = []
        wanted = {}
        taken = set()
        with self._database.session() as session, session.begin():
            # One read of the orders and their steps, then one conditional
            # claim: the steps' rows as read hold for the generations the
            # claim moves from.
            found = repositories.orders.with_steps_many(
                session, {step.order_id for step in steps})
            for index, step in enumerate(steps):
                order, rows = found.get(step.order_id, (None, {}))
                row = rows.get(step.step)
                key = (step.order_id, step.step)
                # A step twice in one batch (a duplicate message) is
                # claimed once.
                if row is None or key in taken or (
                        row.generation, row.status) != (
                        step.generation, models.STEP_PENDING):
                    dropped.append((step, row))
                    continue
                is_delivery = models.url_id_of(step.step) is not None
                try:
                    workflow = order_types.get(order.type)
                except order_types.UnknownOrderType as exc:
                    if is_delivery:
                        # A delivery needs no order type.
                        workflow = None
                    else:
                        # Not claimed: a worker that knows the type takes
                        # it once the dispatch deadline passes.
                        LOG.error('Cannot run %s of order %s: %s',
                                  step.step, order.id, exc)
                        continue
                if is_delivery:
                    step_policy = self._policy(None, step.step)
                elif workflow.has_step(step.step):
                    step_policy = self._policy(workflow, step.step)
                else:
                    # Claimed and failed: the type no longer has this step.
                    step_policy = policy_module.StepPolicy()
                wanted[index] = (order, rows, workflow, step_policy)
                taken.add(key)
            claimed = repositories.steps.claim_many(session, [
                (steps[index].order_id, steps[index].step,
                 steps[index].generation,
                 now + _seconds(step_policy.timeout_seconds))
                for index, (_, _, _, step_policy) in wanted.items()],
                now, self._service_name) if wanted else set()
        for index, (order, rows, workflow, step_policy) in wanted.items():
            step = steps[index]
            if (step.order_id, step.step) in claimed:
                answers[index] = _claimed(
                    step, order, rows, workflow, step_policy, now,
                    workflow is not None and self._events_of(workflow))
            else:
                dropped.append((step, rows[step.step]))
        return answers, dropped

    def _apply_batch(self, items):
        """Write the results ``[(run, result), ...]`` in one transaction
        (``GroupCommit``); log and count them, cast the steps they made
        ready."""
        undone = set()
        planned = True
        while True:
            try:
                written = self._write_results(items, undone, planned)
                break
            except _Undo as undo:
                # One result wrote, then found its step or order moved
                # on: the batch is written again without it.
                undone.add(undo.index)
            except result_plan.Moved:
                # A step or order of the plan moved on: written again one
                # result at a time, which finds the result superseded.
                planned = False
        casts = []
        for (run, _), outcome in zip(items, written):
            if outcome is None:
                LOG.warning('Step %s of order %s moved past token %d while '
                            'it ran; its result was discarded', run.step,
                            run.order_id, run.token)
                self._observe_result(outcomes.SUPERSEDED)
                continue
            # Logged after the commit: one such line per state change.
            LOG.info('Order %s (%s, token %d): %s', run.order_id, run.step,
                     run.token, outcome.description)
            self._observe_result(outcome.kind)
            casts.extend(outcome.casts)
        self._cast(casts)
        return [None] * len(items)

    @_db_retry
    @db_session.retry_lost_race
    def _write_results(self, items, undone, planned):
        """Per item, its ``Outcome`` or None (superseded).

        ``planned``: the results that need only the writes of a
        ``result_plan.Plan``, each the only one of its order in the batch,
        are written together by kind; the others one at a time after them.
        A result found superseded is judged again if the transaction runs
        again (the race it lost was maybe with a rolled-back write); one
        in ``undone`` is skipped.

        :raises result_plan.Moved: a planned result was superseded.
        """
        now = self._clock()
        written = [None] * len(items)
        # In the order of their orders and steps, so that two processes
        # writing results of the same orders lock them in the same order.
        order = sorted((index for index in range(len(items))
                        if index not in undone),
                       key=lambda index: (items[index][0].order_id,
                                          items[index][0].step))
        plan = result_plan.Plan()
        per_order = collections.Counter(items[index][0].order_id
                                        for index in order)
        with self._database.session() as session, session.begin():
            one_by_one = []
            for index in order:
                run, result = items[index]
                if not planned or run.delivery or \
                        per_order[run.order_id] > 1:
                    one_by_one.append(index)
                    continue
                recorder = plan.recorder()
                try:
                    written[index] = outcomes.write(session, recorder, run,
                                                    result, now)
                except result_plan.NotPlanned:
                    one_by_one.append(index)
                else:
                    plan.keep(recorder)
            plan.write(session, self._repositories, now)
            for index in one_by_one:
                written[index] = self._write_one(session, index, items[index],
                                                 now)
        return written

    def _write_one(self, session, index, item, now):
        """Write one result on its own: its ``Outcome``, or None."""
        run, result = item
        try:
            if run.delivery:
                return delivery.write(session, self._repositories,
                                      self._conf, run, result, now)
            return outcomes.write(session, self._repositories, run, result,
                                  now)
        except outcomes.Superseded as exc:
            if exc.wrote:
                raise _Undo(index)
            return None

    def _cast(self, steps):
        if not steps or self._worker_api is None:
            return
        for start in range(0, len(steps), _MAX_BATCH):
            chunk = steps[start:start + _MAX_BATCH]
            try:
                self._worker_api.run_steps(chunk)
            except Exception as exc:
                # Committed as dispatched: the retry daemon casts them
                # again after dispatch_deadline_seconds.
                LOG.warning('Could not cast %d ready step(s) (%s); the '
                            'retry daemon will dispatch them: %s',
                            len(chunk), ', '.join(s.step for s in chunk),
                            exc)


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


class _Undo(Exception):
    """Roll the batch back: the result at ``index`` was superseded after a
    write."""

    def __init__(self, index):
        super().__init__(index)
        self.index = index


# Reprs of hostile input, cut short for the log.
_BOUNDED = reprlib.Repr()
_BOUNDED.maxstring = _BOUNDED.maxother = 120


def _claimed(step, order, rows, workflow, step_policy, now, step_events):
    """The ``(Run, OrderView)`` of a step just claimed at ``now``; a
    delivery has no view."""
    row = rows[step.step]
    run = outcomes.Run(
        order_id=order.id, step=step.step, token=step.generation + 1,
        failures=row.failures, polls=row.polls,
        started_at=row.started_at or now, last_error=row.last_error,
        order_created_at=order.created_at, order_meta=order.meta,
        order_priority=order.priority,
        workflow=workflow, policy=step_policy, steps=rows,
        subscribed=any(models.url_id_of(name) is not None for name in rows),
        step_events=step_events, claimed_at=now)
    if run.delivery or not workflow.has_step(step.step):
        return run, None
    return run, _view(order, workflow, rows, run)


def _view(order, workflow, steps, run):
    """The ``OrderView`` a run of ``run.step`` is given.

    Its metadata is the order's with the outputs of its DONE steps merged
    in, in declaration order.
    """
    meta = dict(order.meta or {})
    for name in workflow.names:
        if name in steps and steps[name].status == models.STEP_DONE:
            meta.update(steps[name].output or {})
    row = steps[run.step]
    return base.OrderView(
        id=order.id, type=order.type, meta=types.MappingProxyType(meta),
        attempt=row.failures, token=run.token, polls=row.polls,
        step=run.step,
        idempotency_key=base.idempotency_key(order.id, run.step),
        steps=types.MappingProxyType(
            {name: step.status for name, step in steps.items()}))


def _seconds(value):
    return datetime.timedelta(seconds=value)


def _describe(row):
    if row is None:
        return 'gone'
    return '%s at generation %d' % (row.status, row.generation)
