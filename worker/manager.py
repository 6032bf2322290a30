"""The worker's RPC endpoints: run steps of orders, fenced.

A message carries one step (``process_type_order``, as an API server
casts it) or several (``run_steps``, as the retry scheduler casts them).
One step is three moves:

1. Claim: in one transaction, move the order's generation from the token
   the message carries to the next one. A step whose token is stale (a
   duplicate, or one overtaken by later work) claims nothing and is dropped.
   For a message of several steps, one read drops the stale ones first.
2. Run the plugin, outside any transaction. Plugins are pure.
3. Apply: in one transaction, turn the plugin's answer into the order's new
   state and, when it asked for it, a retry row carrying the new token.
   Every write is conditional on the token taken in step 1.
"""

import concurrent.futures
import datetime
import threading
import types

from oslo_db import api as oslo_db_api
from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_utils import timeutils

from worker.db import models
from worker import plugins
from worker.plugins import base
from worker import retry_policy
from worker import rpc

LOG = logging.getLogger(__name__)


class WorkerManager:
    """RPC endpoint of the worker pool.

    Only the methods marked ``@messaging.expose`` are served (see
    ``worker.rpc.get_server``).

    :param plugin_factory: returns a certificate plugin for one step;
        called per step so reloaded options apply.
    :param service_name: this process's name (``pid@host``), recorded as
        the owner of the orders it works on.
    :param clock: returns the current UTC time (naive); a parameter so
        tests control time.
    :param observe_result: called with each step's result (``active``,
        ``error``, ``retry``, ``stale``, ``superseded``), or None.
    """

    target = messaging.Target(version=rpc.RPC_API_VERSION)

    def __init__(self, conf, database, plugin_factory, service_name,
                 clock=timeutils.utcnow, observe_result=None,
                 step_concurrency=1):
        self._conf = conf
        self._database = database
        self._orders = database.repositories.orders
        self._retry_tasks = database.repositories.retry_tasks
        self._plugin_factory = plugin_factory
        self._service_name = service_name
        self._clock = clock
        self._observe_result = observe_result or (lambda result: None)
        # The steps of a run_steps message run here, as many at once as a
        # process runs messages: a message is a way to carry steps, not an
        # order in which to run them.
        self._steps = concurrent.futures.ThreadPoolExecutor(
            max_workers=step_concurrency, thread_name_prefix='step')
        # Results the database refused: (step, view, result).
        self._deferred = []
        self._deferred_lock = threading.Lock()

    # What each step asks of the plugin.
    _PLUGIN_CALLS = {
        'process_type_order':
            lambda plugin, view: plugin.issue_certificate_request(view),
        'check_certificate_status':
            lambda plugin, view: plugin.check_certificate_status(view),
    }

    @messaging.expose
    def process_type_order(self, ctxt, order_id, generation):
        """Step 1 of an order: ask the plugin to issue its certificate."""
        self._run_step('process_type_order', order_id, generation)

    @messaging.expose
    def check_certificate_status(self, ctxt, order_id, generation):
        """Later step: ask the plugin whether the certificate is issued."""
        self._run_step('check_certificate_status', order_id, generation)

    @messaging.expose
    def run_steps(self, ctxt, steps):
        """Several steps in one message (RPC 1.1, the retry scheduler's).

        One read drops the steps that are malformed or whose token is
        already stale; the others run concurrently, each exactly as the
        message of its own would. The message returns when its steps are
        done, so a busy process takes no more messages than it can run.

        :param steps: ``[[method, order_id, generation], ...]``.
        """
        futures = [self._steps.submit(self._run_step, *step)
                   for step in self._fence(steps)]
        concurrent.futures.wait(futures)

    def cancel_queued_steps(self):
        """Give up the steps not started yet (the service is stopping).

        They were never claimed: the retry daemon dispatches them again
        once their dispatch deadline passes.
        """
        self._steps.shutdown(wait=False, cancel_futures=True)

    def _fence(self, steps):
        """The well-formed steps of a message whose token is current."""
        wanted = []
        for step in steps:
            try:
                method, order_id, generation = step
                if method not in self._PLUGIN_CALLS:
                    raise ValueError('no such step')
                if not (isinstance(order_id, str) and
                        rpc.is_generation(generation)):
                    raise TypeError('wrong types')
            except (TypeError, ValueError) as exc:
                LOG.error('Dropped malformed step %r: %s', step, exc)
                continue
            wanted.append((method, order_id, generation))
        if not wanted:
            return []
        found = self._read_orders({s[1] for s in wanted})
        live = []
        for method, order_id, generation in wanted:
            order = found.get(order_id)
            if order is not None and (order.step, order.generation,
                                      order.status) == (method, generation,
                                                        models.PENDING):
                live.append((method, order_id, generation))
            else:
                self._drop(method, order_id, generation, order)
        return live

    def _run_step(self, step, order_id, generation):
        try:
            view = self._claim(step, order_id, generation)
            if view is None:
                return
            try:
                result = self._PLUGIN_CALLS[step](self._plugin_factory(),
                                                  view)
            except Exception as exc:
                LOG.exception('Plugin failed on order %s, step %s',
                              order_id, step)
                result = base.Failed('plugin error in %s: %s' % (step, exc))
        except Exception:
            # One step's trouble is its own; the others of its message go
            # on. A claim that failed took nothing.
            LOG.exception('Step %s of order %s failed', step, order_id)
            return
        self._apply_or_defer(step, view, result)

    def _apply_or_defer(self, step, view, result):
        try:
            self._apply(step, view, view.token, result)
        except Exception:
            # The order is ours (claimed) and nothing else takes it back
            # while this process heartbeats: keep the result and write it
            # once the database answers again (apply_deferred_results).
            LOG.exception('Could not write the result of %s of order %s; '
                          'it is kept and written again every '
                          'report_interval', step, view.id)
            with self._deferred_lock:
                self._deferred.append((step, view, result))

    def apply_deferred_results(self):
        """Write again the results that the database refused (an outage).

        Called every ``report_interval`` by the service. A result still
        refused stays for the next call; one whose order moved on is
        discarded by the apply's fencing.
        """
        with self._deferred_lock:
            deferred, self._deferred = self._deferred, []
        for step, view, result in deferred:
            try:
                self._apply(step, view, view.token, result)
            except Exception as exc:
                LOG.warning('Result of %s of order %s still not written: '
                            '%s', step, view.id, exc)
                with self._deferred_lock:
                    self._deferred.append((step, view, result))
            else:
                LOG.info('Result of %s of order %s written after the '
                         'database came back', step, view.id)

    def _drop(self, step, order_id, generation, order):
        LOG.info('Dropped %s of order %s with stale token %d '
                 '(order is %s)', step, order_id, generation,
                 _describe(order))
        self._observe_result('stale')

    # Deadlocks and lost connections roll the transaction back whole, so
    # running it again is safe; the message was already acknowledged and
    # would otherwise be lost.
    _db_retry = oslo_db_api.wrap_db_retry(
        max_retries=5, retry_on_deadlock=True, retry_on_disconnect=True,
        inc_retry_interval=True)

    @_db_retry
    def _read_orders(self, order_ids):
        with self._database.reader() as session, session.begin():
            return self._orders.get_many(session, order_ids)

    def _claim(self, step, order_id, generation):
        """Claim the order for ``step``; its view, or None if stale."""
        view, order = self._claim_in_a_transaction(step, order_id,
                                                   generation)
        if view is None:
            # Logged after the transaction: a retried one logs once.
            self._drop(step, order_id, generation, order)
        return view

    @_db_retry
    def _claim_in_a_transaction(self, step, order_id, generation):
        with self._database.session() as session, session.begin():
            order = self._orders.get(session, order_id)
            if (order is None or order.step != step or
                    not self._orders.claim(session, order_id, generation,
                                           self._clock(),
                                           self._service_name)):
                return None, order
            return base.OrderView(
                id=order.id, type=order.type, attempt=order.attempt,
                token=generation + 1,
                meta=types.MappingProxyType(dict(order.meta or {}))), order

    @_db_retry
    def _apply(self, step, view, token, result):
        now = self._clock()
        try:
            with self._database.session() as session, session.begin():
                outcome = self._write_result(session, step, view, token,
                                             result, now)
                if outcome is None:
                    raise _Superseded()
        except _Superseded:
            LOG.warning('Order %s moved past token %d while %s ran; its '
                        'result was discarded', view.id, token, step)
            self._observe_result('superseded')
            return
        kind, description = outcome
        # Logged after the commit: one such line per state change.
        LOG.info('Order %s (token %d): %s', view.id, token, description)
        self._observe_result(kind)

    def _write_result(self, session, step, view, token, result, now):
        """Write ``result``.

        Returns ``(kind, description)`` of what happened (kind is
        ``active``, ``error`` or ``retry``), or None if superseded.
        """
        if isinstance(result, base.RemoteUnavailable):
            return self._retry_unavailable(session, step, view, token,
                                           result, now)
        if isinstance(result, base.RetryLater):
            method = result.method or step
            retry_at = now + _seconds(result.delay_seconds)
            return self._schedule(session, view.id, token, method, 0,
                                  retry_at, now)
        if isinstance(result, base.Completed):
            return self._finish(session, view.id, token, now,
                                self._orders.complete, result.meta,
                                ('active', 'ACTIVE'))
        if isinstance(result, base.Failed):
            return self._fail(session, view.id, token, now, result.reason)
        return self._fail(session, view.id, token, now,
                          'plugin returned %r' % (result,))

    def _retry_unavailable(self, session, step, view, token, result, now):
        group = self._conf.worker
        attempt = view.attempt + 1
        if attempt > group.max_unavailable_retries:
            reason = ('%s: remote service unavailable after %d retries: %s'
                      % (step, view.attempt, result.reason))
            return self._fail(session, view.id, token, now, reason)
        delay = retry_policy.backoff_seconds(
            attempt, group.unavailable_backoff_base_seconds,
            group.unavailable_backoff_max_seconds)
        outcome = self._schedule(session, view.id, token, step, attempt,
                                 now + _seconds(delay), now)
        if outcome is None:
            return None
        return 'retry', '%s (%s, retry %d)' % (outcome[1], result.reason,
                                               attempt)

    def _schedule(self, session, order_id, token, method, attempt, retry_at,
                  now):
        if not self._orders.schedule_step(session, order_id, token, now,
                                          step=method, attempt=attempt):
            return None
        self._retry_tasks.delete_for_order(session, order_id)
        self._retry_tasks.add(session, order_id, method, retry_at,
                              args=[order_id], kwargs={'generation': token},
                              retry_count=attempt, now=now)
        return 'retry', 'PENDING, %s scheduled at %s' % (method,
                                                         retry_at.isoformat())

    def _fail(self, session, order_id, token, now, reason):
        return self._finish(session, order_id, token, now, self._orders.fail,
                            reason, ('error', 'ERROR: %s' % reason))

    def _finish(self, session, order_id, token, now, transition, detail,
                outcome):
        if not transition(session, order_id, token, now, detail):
            return None
        self._retry_tasks.delete_for_order(session, order_id)
        return outcome


class _Superseded(Exception):
    """Raised to roll back a result whose token is no longer current."""


def _seconds(value):
    return datetime.timedelta(seconds=value)


def _describe(order):
    if order is None:
        return 'gone'
    return '%s at generation %d, step %s' % (order.status, order.generation,
                                             order.step)


def plugin_factory(conf):
    """Return a callable building the configured certificate plugin."""
    plugin_class = plugins.load_class(conf.worker.certificate_plugin)
    return lambda: plugins.instantiate(plugin_class, conf)
