"""Dispatch: cast the due rows to the workers, then delete what was cast.

The due rows are read in batches (the highest priority first, then the
oldest; keyset paging), each batch is cast in messages of up to
``rows_per_cast`` rows, concurrently, and the rows of the casts that went
out are deleted in one transaction that first renews our lock. Rows are
cast *before* they are deleted, so a crash between the two re-sends them
on a later pass (at-least-once); the workers' fencing tokens make such a
duplicate harmless. A daemon whose lock was cleared as stale stops at its
next batch and deletes nothing. A row that can never be cast is parked
with its reason.

A row's request ids (its order's, in its ``retry_kwargs``) go with its
cast (``worker.context``) and on the lines about it: with debug on, one
line per step cast follows an order through the daemon. With tracing on
(``worker.tracing``), each row cast is a ``retry.dispatch`` span in its
order's trace (the due query reads the order's ``trace_context`` then,
and only then), parent of its cast's span.

Each row goes to its order type's topic (``worker.rpcapi.Topics``; the
due query reads the type with the row): a batch is split by topic before
it is split into messages, so that each cast is one message and a failed
cast keeps exactly its own rows.
"""

import concurrent.futures
import datetime
import functools
import time

from oslo_log import log as logging

from worker import context
from worker.db import session as db_session
from worker import rpcapi
from worker import tracing

LOG = logging.getLogger(__name__)


def chunks(task_ids, cast_concurrency, rows_per_cast):
    """Split a batch into the rows of each message.

    At most ``rows_per_cast`` rows each, in near-equal parts, and at least
    ``cast_concurrency`` messages when there are that many rows: the casts
    go out concurrently, and a small batch still reaches several worker
    processes.
    """
    count = min(len(task_ids),
                max(cast_concurrency, -(-len(task_ids) // rows_per_cast)))
    if not count:
        return []
    size, bigger = divmod(len(task_ids), count)
    parts, start = [], 0
    for index in range(count):
        end = start + size + (1 if index < bigger else 0)
        parts.append(tuple(task_ids[start:end]))
        start = end
    return parts


class Dispatcher:
    """Casts the due rows of one pass and deletes or parks them.

    :param worker_api: a ``worker.rpcapi.WorkerAPI`` (or a fake with the
        same ``parse_retry``, ``topic`` and ``run_steps``).
    :param stop_event: once set, the pass stops after its current batch.
    """

    def __init__(self, conf, database, worker_api, pass_lock, stop_event):
        self._conf = conf
        self._database = database
        self._repositories = database.repositories
        self._worker_api = worker_api
        self._pass_lock = pass_lock
        self._stop_event = stop_event

    def run(self, owner_token, now, started, result):
        """Dispatch every row due at ``now``, batch after batch.

        Stops at the end of the rows, when ``stop_event`` is set, after
        ``max_pass_seconds`` (counted from ``started``, a monotonic time),
        or when our lock was lost (``result.lock_lost``).
        """
        group = self._conf.scheduler
        # A new pool per pass: a cast stuck past cast_timeout_seconds is
        # abandoned with its pool and cannot delay the next pass.
        executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=group.cast_concurrency,
            thread_name_prefix='retry-cast')
        try:
            self._batches(executor, owner_token, now, started, result)
        finally:
            executor.shutdown(wait=False, cancel_futures=True)

    def _batches(self, executor, owner_token, now, started, result):
        group = self._conf.scheduler
        after = None
        while not self._stop_event.is_set():
            if time.monotonic() - started > group.max_pass_seconds:
                LOG.info('Pass reached max_pass_seconds; the remaining due '
                         'rows wait for the next pass')
                return
            with self._database.session() as session, session.begin():
                rows = self._repositories.retry_tasks.due(
                    session, now, group.batch_size, after,
                    traces=tracing.ENABLED)
            if not rows:
                return
            after = rows[-1].key
            elapsed = datetime.timedelta(seconds=time.monotonic() - started)
            if not self._batch(executor, rows, owner_token, now + elapsed,
                               result):
                result.lock_lost = True
                return
            if len(rows) < group.batch_size:
                return

    def _parse(self, rows):
        """Split rows into ``{id: step}`` to cast and ``[(row, reason)]``
        to park."""
        steps, bad = {}, []
        for row in rows:
            step = reason = None
            try:
                step = self._worker_api.parse_retry(
                    row.retry_task, row.retry_args,
                    row.retry_kwargs)._replace(order_type=row.order_type)
            except rpcapi.InvalidRetry as exc:
                reason = str(exc)
            if not row.step_exists:
                reason = ('order %s has no step %s (or no longer exists)'
                          % (row.order_id, row.retry_task))
            if reason:
                LOG.error('Retry task %d (order %s, %s) set aside: %s',
                          row.id, row.order_id, row.retry_task, reason,
                          context=context.for_ids(step and step.request))
                bad.append((row, reason))
            else:
                steps[row.id] = step
        return steps, bad

    def _batch(self, executor, rows, owner_token, now, result):
        """Cast one batch, then delete and park in one fenced transaction.

        Returns False if our lock was lost (nothing deleted then).
        """
        group = self._conf.scheduler
        steps, bad = self._parse(rows)
        spans = (_dispatch_spans(rows, steps, now) if tracing.ENABLED
                 else {})
        by_topic = {}
        for task_id, step in steps.items():
            by_topic.setdefault(self._worker_api.topic(step),
                                []).append(task_id)
        casts = {ids: functools.partial(self._worker_api.run_steps,
                                        [steps[i] for i in ids])
                 for of_topic in by_topic.values()
                 for ids in chunks(of_topic, group.cast_concurrency,
                                   group.rows_per_cast)}
        sent = self._cast_all(executor, casts, result)
        if spans:
            _end_spans(spans, sent)
        if LOG.isEnabledFor(logging.DEBUG):
            for task_id in sent:
                step = steps[task_id]
                LOG.debug('Cast step %s of order %s (retry row %d)',
                          step.step, step.order_id, task_id,
                          context=context.for_ids(step.request))
        by_id = {row.id: row for row in rows}
        if not self._delete_and_park(owner_token,
                                     [by_id[i] for i in sent], bad, now):
            LOG.error('Lost the OrderRetryTask lock during a pass; '
                      'stopping it without deleting the %d rows just '
                      'cast (their duplicates will be dropped by the '
                      'workers)', len(sent))
            return False
        result.dispatched += len(sent)
        result.parked += len(bad)
        for task_id in sent:
            result.lateness.add(
                (now - by_id[task_id].retry_at).total_seconds())
        return True

    @db_session.retry_lost_race
    def _delete_and_park(self, owner_token, sent, bad, now):
        """Renew our lock, delete the ``sent`` rows and park the ``bad``
        ones, in one transaction; False, writing nothing, if the lock is no
        longer ours.

        Workers on other nodes of a Galera cluster write the same steps
        and rows at that moment: a lost race is run again.
        """
        repositories = self._repositories
        with self._database.session() as session, session.begin():
            if not self._pass_lock.renew(session, owner_token, now):
                return False
            # Only the steps whose rows were still there: a worker may
            # have moved one on (and replaced its row, under a new id)
            # meanwhile.
            repositories.steps.mark_dispatched(
                session,
                repositories.retry_tasks.delete_as_read(session, sent), now)
            for row, reason in bad:
                repositories.retry_tasks.park(session, row, reason)
        return True

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


def _dispatch_spans(rows, steps, now):
    """``{row id: span}``: a ``retry.dispatch`` span for each row of
    ``steps`` (``{id: values.StepRef}``) whose order has a trace, with its
    lateness at ``now``; each step is given its span's carrier, which its
    cast's span joins."""
    spans = {}
    for row in rows:
        step = steps.get(row.id)
        parent = tracing.carrier(row.trace_context)
        if step is None or parent is None:
            continue
        span = tracing.start('retry.dispatch', parent, attributes={
            'barbican_retry.order_id': row.order_id,
            'barbican_retry.step': row.retry_task,
            'barbican_retry.retry_row': row.id,
            'barbican_retry.retry_count': row.retry_count,
            'barbican_retry.lateness_seconds':
                (now - row.retry_at).total_seconds()})
        spans[row.id] = span
        steps[row.id] = step._replace(trace=span.carrier)
    return spans


def _end_spans(spans, sent):
    """End the dispatch ``spans``; those whose rows were not ``sent``
    (their cast failed: they stay for the next pass) marked failed."""
    sent = set(sent)
    for task_id, span in spans.items():
        if task_id not in sent:
            span.fail('cast failed or timed out; the row stays')
        span.end()
