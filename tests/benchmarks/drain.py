"""Target 2: drain N retry rows all due at one moment T, against Celery.

Ours: a real ``barbican-worker`` pool of 3 processes and one
``barbican-retry`` daemon (period 1 s, every other option at its default)
on PostgreSQL and the shared RabbitMQ. Two kinds of rows:

Every row names the step ``check_certificate_status`` of a real
certificate order, at the step's generation (see ``seed``).

- ``noop`` (the target's figure): the order waits at its other step
  (``process_type_order`` PENDING), so the named step is still WAITING and
  the worker drops it after reading its row (one read for all the steps of
  a message, in one transaction), and logs that line once per step. Lost
  = orders with no such line, duplicated = extra lines; the drain ends at
  the last line.
- ``complete`` (shown beside it): ``process_type_order`` is DONE and the
  named step PENDING, so each cast claims the step, runs the simple plugin
  and completes the order (two transactions). Lost = orders not ACTIVE at
  the end; duplicated = casts dropped for a used token.

Celery: the same number of tasks with ``eta=T`` on the same broker, a
prefork worker with the same number of processes (see ``celery_side``).
Both are timed from T to the last completion.
"""

import collections
import datetime
import re
import time

from oslo_utils import timeutils

from tests.benchmarks import celery_side
from tests.benchmarks import env
from tests.benchmarks import graphile_side
from tests.benchmarks import procs
from tests.benchmarks import seed
from tests.functional import databases

PERIOD = 1
_DROPPED = re.compile(
    r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) .*Dropped '
    r'check_certificate_status of order (\S+) ')


def _dropped(log_text):
    """``(Counter of order ids, first epoch, last epoch)`` of the workers'
    drop lines."""
    seen, stamps = collections.Counter(), []
    for line in log_text.splitlines():
        match = _DROPPED.match(line)
        if match:
            seen[match.group(2)] += 1
            stamp = datetime.datetime.strptime(match.group(1),
                                               '%Y-%m-%d %H:%M:%S.%f')
            stamps.append(time.mktime(stamp.timetuple()) +
                          stamp.microsecond / 1e6)
    if not stamps:
        return seen, None, None
    return seen, min(stamps), max(stamps)


def _wait_for_drops(workers, count, timeout):
    deadline = time.monotonic() + timeout
    while True:
        seen = _dropped(workers.log())[0]
        if len(seen) >= count or time.monotonic() > deadline:
            return
        time.sleep(0.25)


def drain_ours(transport_url, count, worker_processes, workdir, log,
               mode='noop', backend='postgresql'):
    """Drain ``count`` due rows with the product; returns its figures."""
    topic = env.new_topic()
    name = 'drain-%s%s' % (
        mode, '' if backend == 'postgresql' else '-' + backend)
    with env.database(backend, workdir) as (url, database):
        config = procs.write_config(
            workdir, name, url, transport_url, topic,
            {'scheduler': {'schedule_period_seconds': PERIOD},
             'worker': {'workers': worker_processes}})
        with procs.workers(workdir, config, worker_processes,
                           name + '-workers') as workers, \
                procs.scheduler(workdir, config, name + '-retry') as retry:
            pool = procs.PoolWatch(workers, retry)
            # T a little ahead, so every row is in before it is due.
            due = timeutils.utcnow() + datetime.timedelta(seconds=2)
            step = ('process_type_order' if mode == 'noop'
                    else 'check_certificate_status')
            batch = seed.load(database, count, due, step=step)
            log('drain (%s): %d rows due at T, %d worker processes', mode,
                count, worker_processes)
            timeout = 60 + count / 20.0
            if mode == 'noop':
                _wait_for_drops(workers, count, timeout)
                time.sleep(2 * PERIOD)  # room for a late duplicate
                seen, first, last = _dropped(workers.log())
                done = len(seen)
                duplicated = sum(seen.values()) - done
                seconds = last - procs.epoch(due) if last else float('nan')
                first_after_due = (first - procs.epoch(due) if first
                                   else float('nan'))
            else:
                done, last = procs.wait_for_status(
                    database, batch.prefix, count, timeout=timeout)
                time.sleep(2 * PERIOD)  # room for a late duplicate
                duplicated = procs.count_in_log(workers, 'Dropped ')
                seconds = ((last - due).total_seconds() if last
                           else float('nan'))
                first_after_due = float('nan')
            cast_failures = procs.count_in_log(retry, 'casts failed or')
            # A no-op drop claims nothing: only completed steps are runs.
            pool_figures = pool.stop(steps=done if mode == 'complete'
                                     else 0)
        remaining = seed.count_rows(database)
    return {
        'mode': mode, 'rows': count, 'processes': worker_processes,
        'backend': backend, 'done': done, 'lost': count - done,
        'duplicated': duplicated, 'seconds': seconds,
        'rate': done / seconds if seconds == seconds else 0.0,
        'rows_left': remaining, 'cast_failure_lines': cast_failures,
        'first_after_due': first_after_due, **pool_figures,
    }


def complete_on_mariadb(transport_url, count, processes, workdir, log):
    """Issue 32: the claim + complete drain on MariaDB, or ``{'error':
    ...}``."""
    if not databases.server_url('mysql'):
        return {'error': 'no MariaDB server configured'}
    figures = drain_ours(transport_url, count, processes, workdir, log,
                         mode='complete', backend='mysql')
    log('drain: ours (complete, MariaDB) %.0f orders/s', figures['rate'])
    return figures


def run(transport_url, workdir, quick, log):
    """Targets 2 (no-op) and 12.1 (complete), 12.3 (CPU per step) and 12.7
    (memory of the pool's processes); returns the raw figures."""
    count = 2000 if quick else 10000
    processes = 3
    results = {'rows': count, 'processes': processes}
    results['ours'] = drain_ours(transport_url, count, processes, workdir,
                                 log)
    log('drain: ours (noop) %.0f rows/s', results['ours']['rate'])
    results['ours_complete'] = drain_ours(
        transport_url, count, processes, workdir, log, mode='complete')
    log('drain: ours (complete) %.0f orders/s, %.2f ms CPU per step',
        results['ours_complete']['rate'],
        results['ours_complete']['cpu_ms_per_step'])
    if not quick:
        # The memory target's size: long, so only in the full run.
        results['ours_complete_100k'] = drain_ours(
            transport_url, 100000, processes, workdir, log, mode='complete')
    results['complete_mariadb'] = complete_on_mariadb(
        transport_url, count, processes, workdir, log)
    try:
        results['celery'] = celery_side.drain(
            env.kombu_url(transport_url), count, processes, workdir, log)
    except Exception as exc:  # the peer's failure costs only its figure
        log('celery failed: %s', exc)
        results['celery'] = {'error': '%s: %s' % (type(exc).__name__, exc)}
    results['graphile'] = graphile_side.figures_or_error(
        'drain', workdir, count, processes, log)
    return results
