"""One pass of the retry scheduler: ``RetryManager.run_once(now)``.

A pass first looks, in one read-only transaction, whether it has anything
to do: a due row, a lock to judge, or recovery to run (at most once per
``[DEFAULT] report_interval``, the cadence at which liveness can change).
A pass with nothing to do ends there, without writing. Otherwise it takes
the OrderRetryTask lock, reads the due rows in batches (oldest first),
casts them to the workers and deletes what it cast, then releases the
lock. Rows are cast *before* they are deleted, so a crash
between the two re-sends them on a later pass (at-least-once); the
workers' fencing tokens make such a duplicate harmless. Deletion commits
only in a transaction that first renews our own lock, so a daemon whose
lock was cleared as stale stops at its next batch.
"""

import concurrent.futures
import dataclasses
import datetime
import functools
import threading
import time
import uuid

from oslo_db import exception as db_exc
from oslo_log import log as logging

from scheduler import lateness as lateness_stats

from worker.db import locks
from worker.db import models
from worker.db import orders
from worker.db import retry_tasks
from worker.db import services
from worker import liveness
from worker import rpcapi

LOG = logging.getLogger(__name__)

LOCK = models.ORDER_RETRY_TASK_LOCK

# What a read-only look says a pass has to do.
_IDLE = 'idle'
_HELD = 'lock held'
_OLD_LOCK = 'lock to judge'
_WORK = 'work'


@dataclasses.dataclass
class PassResult:
    """What one pass did."""

    idle: bool = False
    locked: bool = False
    stale_lock_cleared: bool = False
    recovered: int = 0
    dead_services: list = dataclasses.field(default_factory=list)
    dispatched: int = 0
    parked: int = 0
    cast_failures: int = 0
    lock_lost: bool = False
    lateness: lateness_stats.LatenessTracker = dataclasses.field(
        default_factory=lateness_stats.LatenessTracker)


class RetryManager:
    """Runs passes of the retry scheduler.

    :param worker_api: a ``worker.rpcapi.WorkerAPI`` (or a fake with the
        same ``parse_retry`` and ``run_steps``).
    :param stop_event: set it to make a running pass stop after its
        current batch.
    :param observe_lateness: called with each cast's lateness in seconds
        (a metrics histogram), or None.
    :param holder_name: the name recorded in the lock row: this daemon's
        service name (``pid@host``), so that others can tell from its
        heartbeat whether it is alive; ``[DEFAULT] host`` by default.
    """

    def __init__(self, conf, database, worker_api, stop_event=None,
                 observe_lateness=None, holder_name=None):
        self._conf = conf
        self._holder_name = holder_name or conf.host
        self._database = database
        self._worker_api = worker_api
        self._stop_event = stop_event or threading.Event()
        self._observe_lateness = observe_lateness
        self._recovered_at = None

    def run_once(self, now):
        """Run one pass as of ``now`` (naive UTC); returns a PassResult."""
        group = self._conf.scheduler
        result = PassResult(
            lateness=lateness_stats.LatenessTracker(self._observe_lateness))
        started = time.monotonic()
        outlook, recover = self._look(now)
        if outlook is _IDLE:
            result.idle = True
            self._log(result, time.monotonic() - started)
            return result
        token = str(uuid.uuid4())
        if outlook is _OLD_LOCK:
            result.stale_lock_cleared = self._clear_stale_lock(now)
        if outlook is _HELD or not self._acquire(token, now):
            LOG.debug('OrderRetryTask lock held by another process; '
                      'skipping this pass')
            return result
        result.locked = True
        # A new pool per pass: a cast stuck past cast_timeout_seconds is
        # abandoned with its pool and cannot delay the next pass.
        executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=group.cast_concurrency,
            thread_name_prefix='retry-cast')
        try:
            if not recover or self._recover(token, now, result):
                self._dispatch_batches(executor, token, now, started, result,
                                       group)
        finally:
            executor.shutdown(wait=False, cancel_futures=True)
            self._release(token)
        self._log(result, time.monotonic() - started)
        return result

    def _recovery_due(self, now):
        # A process is declared dead service_down_time after its last
        # heartbeat, and heartbeats come every report_interval: looking
        # more often than that finds nothing new.
        interval = datetime.timedelta(seconds=self._conf.report_interval)
        return (self._recovered_at is None or
                now - self._recovered_at >= interval or
                now < self._recovered_at)  # the clock went back

    def _look(self, now):
        """Tell, reading only, what this pass has to do.

        Returns ``(outlook, recover)``: ``_IDLE`` (nothing due, nothing
        lost), ``_HELD`` (a lock too young to be stale: its holder is on
        it), ``_OLD_LOCK`` (a lock to judge, and clear if stale) or
        ``_WORK``; ``recover`` says whether the pass must take lost orders
        back. When recovery was due and the look found nothing lost, it
        counts as done.
        """
        conf = self._conf
        recovery_due = self._recovery_due(now)
        fresh_since = max(
            liveness.alive_since(now, conf.service_down_time),
            liveness.lock_stale_before(
                now, conf.scheduler.retry_lock_timeout_seconds))
        with self._database.reader() as session, session.begin():
            holder = locks.get(session, LOCK)
            if holder is not None:
                # An older lock is judged, and maybe cleared, under a
                # write transaction by the full pass.
                if holder.created_at >= fresh_since:
                    return _HELD, recovery_due
                return _OLD_LOCK, recovery_due
            if recovery_due and self._anything_lost(session, now):
                return _WORK, True
            if recovery_due:
                self._recovered_at = now
            if retry_tasks.any_due(session, now):
                return _WORK, False
        return _IDLE, False

    def _anything_lost(self, session, now):
        alive_since = liveness.alive_since(now, self._conf.service_down_time)
        return bool(self._lost_orders(session, now, 1) or
                    services.any_dead(session, alive_since))

    def _lost_orders(self, session, now, limit):
        """Orders whose dispatch or owner was lost, up to ``limit`` each."""
        conf = self._conf
        alive_since = liveness.alive_since(now, conf.service_down_time)
        deadline = liveness.dispatch_lost_before(
            now, conf.scheduler.dispatch_deadline_seconds)
        dead_owners = liveness.dead_owners(
            orders.owners(session),
            services.live_names(session, alive_since))
        return (orders.lost_dispatches(session, deadline, limit) +
                orders.owned_by(session, dead_owners, limit))

    def _recover(self, token, now, result):
        """Take back orders whose dispatch or owner was lost.

        Each one gets a new token and a retry row due ``now``, which this
        pass then casts like any other. An order whose owner is alive is
        never taken, however long its step runs. Returns False if our lock
        was lost.
        """
        alive_since = liveness.alive_since(now, self._conf.service_down_time)
        with self._database.session() as session, session.begin():
            if not locks.renew(session, LOCK, token, now):
                result.lock_lost = True
                return False
            limit = self._conf.scheduler.batch_size
            lost = self._lost_orders(session, now, limit)
            if len(lost) < limit:
                # All found; with more, the next pass goes on.
                self._recovered_at = now
            for order in lost:
                if not orders.take_back(session, order.id, order.generation,
                                        now):
                    continue
                retry_tasks.add(session, order.id, order.step, now,
                                args=[order.id],
                                kwargs={'generation': order.generation + 1},
                                retry_count=order.attempt, now=now)
                result.recovered += 1
                LOG.warning(
                    'Order %s taken back and dispatched again (%s): %s',
                    order.id, order.step,
                    'its owner %s stopped heartbeating' % order.owner
                    if order.owner else 'no worker took up its dispatch')
            result.dead_services = services.delete_dead(session, alive_since)
        for name in result.dead_services:
            LOG.warning('Service %s stopped heartbeating; removed', name)
        return True

    def _dispatch_batches(self, executor, token, now, started, result,
                          group):
        after = None
        while not self._stop_event.is_set():
            if time.monotonic() - started > group.max_pass_seconds:
                LOG.info('Pass reached max_pass_seconds; the remaining due '
                         'rows wait for the next pass')
                return
            with self._database.session() as session, session.begin():
                rows = retry_tasks.due(session, now, group.batch_size, after)
            if not rows:
                return
            after = (rows[-1].retry_at, rows[-1].id)
            elapsed = datetime.timedelta(seconds=time.monotonic() - started)
            if not self._dispatch_batch(executor, rows, token,
                                        now + elapsed, result):
                result.lock_lost = True
                return
            if len(rows) < group.batch_size:
                return

    def _dispatch_batch(self, executor, rows, token, now, result):
        """Cast one batch, then delete and park in one fenced transaction.

        Returns False if our lock was lost (nothing deleted then).
        """
        steps, bad = {}, []
        for row in rows:
            reason = None
            if not row.order_exists:
                reason = 'order %s no longer exists' % row.order_id
            else:
                try:
                    steps[row.id] = self._worker_api.parse_retry(
                        row.retry_task, row.retry_args, row.retry_kwargs)
                except rpcapi.InvalidRetry as exc:
                    reason = str(exc)
            if reason:
                LOG.error('Retry task %d (order %s, %s) set aside: %s',
                          row.id, row.order_id, row.retry_task, reason)
                bad.append((row, reason))
        casts = {ids: functools.partial(self._worker_api.run_steps,
                                        [steps[i] for i in ids])
                 for ids in self._chunks(list(steps))}
        sent = self._cast_all(executor, casts, result)
        with self._database.session() as session, session.begin():
            if not locks.renew(session, LOCK, token, now):
                LOG.error('Lost the OrderRetryTask lock during a pass; '
                          'stopping it without deleting the %d rows just '
                          'cast (their duplicates will be dropped by the '
                          'workers)', len(sent))
                return False
            by_id = {row.id: row for row in rows}
            # Only the orders whose rows are still as read: a worker may
            # have moved one on (and replaced its row) in the meantime.
            orders.mark_dispatched(session, retry_tasks.delete_as_read(
                session, [by_id[task_id] for task_id in sent]), now)
            for row, reason in bad:
                retry_tasks.park(session, row, reason)
        result.dispatched += len(sent)
        result.parked += len(bad)
        for task_id in sent:
            result.lateness.add(
                (now - by_id[task_id].retry_at).total_seconds())
        return True

    def _chunks(self, task_ids):
        """Split a batch into the rows of each message.

        At most ``rows_per_cast`` rows each, in near-equal parts, and at
        least ``cast_concurrency`` messages when there are that many rows:
        the casts go out concurrently, and a small batch still reaches
        several worker processes.
        """
        group = self._conf.scheduler
        count = min(len(task_ids),
                    max(group.cast_concurrency,
                        -(-len(task_ids) // group.rows_per_cast)))
        if not count:
            return []
        size, bigger = divmod(len(task_ids), count)
        chunks, start = [], 0
        for index in range(count):
            end = start + size + (1 if index < bigger else 0)
            chunks.append(tuple(task_ids[start:end]))
            start = end
        return chunks

    def _cast_all(self, executor, casts, result):
        """Run the casts concurrently; return the row ids that were sent.

        :param casts: ``{row ids: cast}``; a failed cast keeps its rows.
        """
        if not casts:
            return []
        futures = {executor.submit(cast): task_ids
                   for task_ids, cast in casts.items()}
        done, not_done = concurrent.futures.wait(
            futures, timeout=self._conf.scheduler.cast_timeout_seconds)
        sent, failed, first_error = [], 0, None
        for future in futures:
            if future in done and future.exception() is None:
                sent.extend(futures[future])
                continue
            failed += 1
            if first_error is None and future in done:
                first_error = future.exception()
        if failed:
            kept = sum(len(task_ids) for task_ids in casts) - len(sent)
            result.cast_failures += kept
            LOG.warning('%d of %d casts failed or timed out (%d timed out); '
                        'their %d rows stay for the next pass. First '
                        'error: %s', failed, len(casts), len(not_done),
                        kept, first_error)
        return sent

    def _clear_stale_lock(self, now):
        """Clear the lock if it is stale; returns True if it was cleared.

        Stale is the blueprint's rule, a lock older than
        ``retry_lock_timeout_seconds``, or sooner a lock whose holder has
        stopped heartbeating for ``service_down_time`` (a killed daemon).
        Only the lock that was read is deleted (by its owner token), never
        one a live daemon took in between.
        """
        conf = self._conf
        timeout = conf.scheduler.retry_lock_timeout_seconds
        alive_since = liveness.alive_since(now, conf.service_down_time)
        with self._database.session() as session, session.begin():
            holder = locks.get(session, LOCK)
            if holder is None:
                return False
            if holder.created_at < liveness.lock_stale_before(now, timeout):
                why = 'taken at %s, older than %ds' % (holder.created_at,
                                                       timeout)
            elif (holder.created_at < alive_since and
                  holder.worker_host_name not in
                  services.live_names(session, alive_since)):
                why = 'its holder stopped heartbeating'
            else:
                return False
            cleared = locks.release(session, LOCK, holder.owner_token)
        if cleared:
            LOG.warning('Cleared the stale OrderRetryTask lock of %s: %s',
                        holder.worker_host_name, why)
        return cleared

    def _acquire(self, token, now):
        try:
            with self._database.session() as session, session.begin():
                locks.insert(session, LOCK, self._holder_name, token, now)
        except db_exc.DBDuplicateEntry:
            return False
        return True

    def _release(self, token):
        try:
            with self._database.session() as session, session.begin():
                released = locks.release(session, LOCK, token)
        except Exception:
            LOG.exception('Could not release the OrderRetryTask lock; it '
                          'will be cleared when stale')
            return
        if not released:
            LOG.warning('The OrderRetryTask lock was no longer ours at the '
                        'end of the pass')

    @staticmethod
    def _log(result, duration):
        # The "found nothing due" line's format is read by the benchmark.
        if not (result.dispatched or result.parked or result.cast_failures
                or result.recovered):
            LOG.debug('Pass found nothing due (%.3fs)', duration)
            return
        p99 = result.lateness.p99()
        LOG.info('Pass dispatched %d retries, set aside %d, %d casts failed, '
                 'recovered %d lost orders, in %.3fs; lateness p99 %.1fs',
                 result.dispatched, result.parked, result.cast_failures,
                 result.recovered, duration, p99)
