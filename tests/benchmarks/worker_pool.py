"""Target 6: whole orders completed per second, 1 vs 2 workers.

Whole orders as an order type runs them, on PostgreSQL and RabbitMQ: N
PENDING orders are created through ``worker.api.commands`` (the
operator's ``order create``), and their first steps are cast, one message
per order, as an API server would after creating them. The workers run
every step and cast the steps each result makes ready; a step that waits
(none here) would be cast by the ``barbican-retry`` daemon (period 1 s).
Rate = N / (last order ACTIVE - first cast).

- ``certificate`` (the target's figure): the simple plugin issues at once
  and asks for a status check after ``delay_before_update_seconds`` = 0;
  two steps in sequence. Run with 1 and then 2 worker processes, each on a
  fresh database.
- ``fanout`` (shown beside it, with 2 processes): three checks in
  parallel, issue, poll, then two steps in parallel; seven steps, with
  ``[fanout] poll_interval_seconds`` = 0.
- ``certificate`` with notifications (2 processes): each order has a
  callback URL, a receiver process on 127.0.0.1
  (``tests.benchmarks.receiver``: kept-alive connections, signatures
  verified, each order's events checked in ``sequence`` order); its three
  events (created, active, end) are delivered by the same workers, the
  deliveries' first run waiting for the order's end (``FIRST_RUN_DELAY``).
  Events/s = events acknowledged / (last acknowledged - first cast),
  beside the orders/s of that run; the receiver's CPU time is counted
  per event, as it shares the CPUs with the pool.

The machine's CPU use over the same interval is recorded beside each
figure: a second worker process can only add what the first left idle of
the CPUs that the broker, the database and the daemon share with it.
"""

import concurrent.futures
import contextlib
import os
import time

import psutil

from oslo_utils import timeutils

from tests.benchmarks import env
from tests.benchmarks import graphile_side
from tests.benchmarks import procs
from tests.benchmarks import receive_floor
from tests.benchmarks import receiver as receivers
from tests.functional import databases
from worker.api import casts
from worker.api import commands
from worker.api import requests
from worker import context as context_module
from worker.db import orders
from worker import order_types

CAST_THREADS = 8


class _Held:
    """A ``WorkerAPI`` stand-in that keeps the casts for later.

    The orders are created before the workers start; their casts are sent
    once they serve, and timed.
    """

    def __init__(self):
        self.messages = []

    def run_steps(self, steps, context=None):
        """Keep one message's steps (their orders' request ids with them:
        the benchmark's client puts them in the cast's context)."""
        self.messages.append(list(steps))


def create_orders(database, workflow, count, notify=(), first_run_delay=0.0):
    """Create ``count`` orders of ``workflow``; their casts, one per order
    (and one per order's delivery to each URL of ``notify``, unless their
    first run waits ``first_run_delay``).
    """
    held = _Held()
    # With request ids, as worker.api gives every order: their casts
    # carry them and the workers log with them, which is part of a step's
    # cost.
    created = commands.create(database, requests.CreateOrders(
        workflow, {}, count, notify=notify, origin=_ORIGIN,
        first_run_delay=first_run_delay), timeutils.utcnow())
    casts.cast_steps(held, created.to_cast,
                     rows_per_cast=len(workflow.roots()),
                     context=context_module.for_ids(
                         context_module.of_order(_ORIGIN)))
    return held.messages


#: The request that created the orders.
_ORIGIN = orders.Origin(
    project_id='benchmark',
    request_id='req-4f1b8c2e-6d0a-4e7b-9c3f-1a2b3c4d5e6f',
    global_request_id='req-9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b')

_SECRET = 'benchmark-secret'
#: ``[notifications] first_run_delay_seconds`` of the notified run. The
#: orders are all created before the workers start, and the last ones end
#: after the whole backlog: the delay covers that, so that each order's
#: ACTIVE event starts its delivery, which sends its three events in one
#: run. A delay shorter than an order's life costs a second run (and, for
#: the orders still queued when it passes, a cast by the retry daemon).
FIRST_RUN_DELAY = 60.0
#: The events of one certificate order: created, active, end.
_EVENTS_PER_ORDER = 3


def measure(transport_url, count, worker_processes, workdir, log,
            order_type='certificate', notify=False, prepare=None,
            during=None, backend='postgresql'):
    """Complete ``count`` orders of ``order_type`` with ``worker_processes``;
    figures. ``notify``: each order's events go to a local receiver.

    :param prepare: called with the new database first (rows that are
        there before the orders: ``tests.benchmarks.purge``).
    :param during: called with the database; the context manager it
        returns is entered at the first cast and left once every order
        is ACTIVE (work beside the pool's).
    """
    topic = env.new_topic()
    name = 'pool-%s-%d%s%s' % (
        order_type, worker_processes, '-notify' if notify else '',
        '' if backend == 'postgresql' else '-' + backend)
    workflow = order_types.get(order_type)
    receiver = receivers.Receiver(_SECRET).start() if notify else None
    options = {'scheduler': {'schedule_period_seconds': 1},
               'worker': {'workers': worker_processes},
               'simple_certificate': {'delay_before_update_seconds': 0},
               'fanout': {'poll_interval_seconds': 0}}
    if receiver:
        options['notifications'] = {
            'allowed_hosts': '127.0.0.1', 'secret': _SECRET,
            'first_run_delay_seconds': FIRST_RUN_DELAY}
    with env.database(backend, workdir) as (url, database):
        if prepare is not None:
            prepare(database)
        config = procs.write_config(workdir, name, url, transport_url,
                                    topic, options)
        messages = create_orders(
            database, workflow, count,
            notify=[receiver.url] if receiver else (),
            first_run_delay=FIRST_RUN_DELAY if receiver else 0.0)
        api = env.worker_api(transport_url, topic)
        with procs.workers(workdir, config, worker_processes,
                           name + '-workers') as workers, \
                procs.scheduler(workdir, config, name + '-retry') as retry:
            log('worker pool: %d %s orders, %d worker process(es), %s',
                count, order_type, worker_processes, backend)
            watch = procs.PoolWatch(workers, retry)
            first_cast = timeutils.utcnow()
            started = time.monotonic()
            if receiver:
                receiver.mark()
            cpu_before = psutil.cpu_times()
            servers_before = procs.servers_cpu_seconds()
            own_before = time.process_time()
            with (during or _nothing)(database):
                with concurrent.futures.ThreadPoolExecutor(
                        CAST_THREADS) as pool:
                    list(pool.map(api.run_steps, messages))
                cast_seconds = time.monotonic() - started
                done, last = procs.wait_for_status(
                    database, '', count,
                    timeout=60 + count * len(workflow.names) / 20.0)
            _wait_for_events(receiver, count * _EVENTS_PER_ORDER)
            busy = _busy_share(cpu_before, psutil.cpu_times())
            servers = procs.servers_cpu_spent(
                servers_before, procs.servers_cpu_seconds())
            own = time.process_time() - own_before
            pool_figures = watch.stop(steps=done * len(workflow.names))
            dropped = procs.count_in_log(workers, 'Dropped ')
    seconds = (last - first_cast).total_seconds() if last else float('nan')
    if receiver:
        pool_figures.update(_receiver_figures(receiver, started),
                            first_run_delay=FIRST_RUN_DELAY)
    return {
        'backend': backend,
        'order_type': order_type, 'steps_per_order': len(workflow.names),
        'processes': worker_processes, 'orders': count, 'done': done,
        'seconds': seconds, 'rate': done / seconds if last else 0.0,
        'step_rate': (done * len(workflow.names) / seconds if last
                      else 0.0),
        'cast_seconds': cast_seconds, 'dropped': dropped,
        'cpu_busy': busy, 'cpus': len(os.sched_getaffinity(0)),
        **pool_figures,
        'cpu_ms_per_order': _cpu_per_order(pool_figures, servers, own,
                                           done),
    }


def _cpu_per_order(pool_figures, servers, own, done):
    """Milliseconds of CPU per order completed, by process: the worker
    pool, the database and the broker servers, and this process (the
    casts of the orders' first steps, as an API server's, and the polling
    for the end). The retry daemon is left out: nothing is due here."""
    if not done:
        return {}
    per_order = {'worker': pool_figures['worker_cpu_seconds'],
                 'database': servers.get('database', 0.0),
                 'broker': servers.get('broker', 0.0),
                 'casts': own}
    return {name: 1000.0 * seconds / done
            for name, seconds in per_order.items()}


def _receiver_figures(receiver, started):
    """The events the receiver acknowledged, and what it cost; stops it.
    """
    try:
        stats = receiver.stats()
        cpu = receiver.cpu_seconds()
    finally:
        receiver.stop()
    events, last_at = stats['events'], stats['last_at']
    seconds = last_at - started if last_at else float('nan')
    return {'events': events, 'events_seconds': seconds,
            'event_rate': events / seconds if last_at else 0.0,
            'events_duplicated': stats['duplicates'],
            'events_out_of_order': stats['out_of_order'],
            'events_bad_signature': stats['bad_signatures'],
            'orders_notified': stats['events_per_order'].get(
                str(_EVENTS_PER_ORDER), 0),
            'receiver_cpu_seconds': cpu,
            'receiver_cpu_per_event': cpu / max(stats['requests'], 1)}


def _nothing(database):
    return contextlib.nullcontext()


def _wait_for_events(receiver, expected, timeout=120):
    """Wait until ``receiver`` acknowledged ``expected`` events in order;
    how many it did (0 without a receiver)."""
    if receiver is None:
        return 0
    deadline = time.monotonic() + timeout
    while receiver.count() < expected and time.monotonic() < deadline:
        time.sleep(0.2)
    return receiver.count()


def _busy_share(before, after):
    """Share of the machine's CPU time spent busy between two readings."""
    total = sum(after) - sum(before)
    idle = (after.idle - before.idle) + (getattr(after, 'iowait', 0) -
                                         getattr(before, 'iowait', 0))
    return 1.0 - idle / total if total else 0.0


def _procrastinate(count, processes, workdir, log):
    """Procrastinate's figure for the same work, or ``{'error': ...}``."""
    try:
        from tests.benchmarks import procrastinate_side
        # The server ours runs on; the peer makes a database of its own.
        return procrastinate_side.measure(
            databases.server_url('postgresql'), workdir, count, processes,
            log)
    except Exception as exc:  # the peer's failure is a row, not a crash
        log('procrastinate (%d processes) failed: %s', processes, exc)
        return {'error': '%s: %s' % (type(exc).__name__, exc)}


def on_mariadb(transport_url, count, workdir, log):
    """Issue 32's MariaDB figures: the certificate pool of ``one`` and
    ``two`` on MariaDB, 1 and 2 processes, or ``{'error': ...}``."""
    if not databases.server_url('mysql'):
        return {'error': 'no MariaDB server configured'}
    return {'one': measure(transport_url, count, 1, workdir, log,
                           backend='mysql'),
            'two': measure(transport_url, count, 2, workdir, log,
                           backend='mysql')}


def run(transport_url, workdir, quick, log):
    """Targets 6, 12.2, 12.3, 32.4 (Graphile Worker, and what one process
    can receive at most: ``receive_floor``) and 32's MariaDB; returns the
    raw figures."""
    count = 400 if quick else 3000
    results = {'orders': count,
               'one': measure(transport_url, count, 1, workdir, log),
               'two': measure(transport_url, count, 2, workdir, log),
               'fanout_two': measure(transport_url, count, 2, workdir, log,
                                     order_type='fanout'),
               'notified_two': measure(transport_url, count, 2, workdir,
                                       log, notify=True),
               'mariadb': on_mariadb(transport_url, count, workdir, log)}
    for key, processes in (('procrastinate_one', 1),
                           ('procrastinate_two', 2)):
        results[key] = _procrastinate(count, processes, workdir, log)
    for key, processes in (('graphile_one', 1), ('graphile_two', 2)):
        results[key] = graphile_side.figures_or_error(
            'pool', workdir, count, processes, log)
    results['receive_floor'] = _receive_floor(transport_url, count, log)
    return results


def _receive_floor(transport_url, count, log):
    """``receive_floor``'s figures, or ``{'error': ...}``."""
    try:
        return receive_floor.measure(transport_url, count, CAST_THREADS,
                                     log)
    except Exception as exc:  # a failed reference is a row, not a crash
        log('receive floor failed: %s', exc)
        return {'error': '%s: %s' % (type(exc).__name__, exc)}
