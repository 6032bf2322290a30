"""Helpers of the functional tests of declared workflows (order types).

Real barbican-worker and barbican-retry processes run the test order type
``recording_fanout`` (``tests/plugin.py: RecordingFanout``), which records
every run of a step with its token and idempotency key.
"""

import collections
import json

from tests.functional import processes
from tests import plugin as test_plugin
from worker.db import orders
from worker.db import services as services_repository
from worker.db import steps

TYPE = 'recording_fanout'
CHECKS = ('check_domains', 'check_caa', 'check_key')
STEPS = CHECKS + ('issue', 'poll', 'store', 'notify')

#: Short periods: one retry pass a second, dead workers found in 3 s,
#: lost dispatches in 5 s.
FAST = {
    'DEFAULT': {'service_down_time': 3, 'report_interval': 1},
    'scheduler': {'schedule_period_seconds': 1, 'schedule_jitter': 0.2,
                  'dispatch_deadline_seconds': 5, 'cast_timeout_seconds': 2,
                  'max_pass_seconds': 5, 'retry_lock_timeout_seconds': 20},
    'worker': {'workers': 1, 'certificate_plugin': 'recording'},
    'simple_certificate': {'delay_before_update_seconds': 1},
    'fanout': {'poll_interval_seconds': 0.5},
}


def step_group(step):
    """The option group of one step of the recorded fan-out type."""
    return 'step:%s.%s' % (TYPE, step)


def options(*overrides):
    """``FAST`` with every step retried quickly, then ``overrides``.

    Each override is ``{group: {name: value}}``, merged group by group.
    """
    merged = {group: dict(values) for group, values in FAST.items()}
    for step in STEPS + ('revoke',):
        merged[step_group(step)] = {'backoff_base_seconds': 0.2,
                                    'backoff_max_seconds': 1}
    for override in overrides:
        for group, values in override.items():
            merged.setdefault(group, {}).update(values)
    return merged


def start(cluster, count=1):
    """Start the worker pool (``count`` processes) and the retry daemon.

    Returns ``(workers, retry)`` once both are serving.
    """
    workers = cluster.start('barbican-worker', 'worker')
    retry = cluster.start('barbican-retry', 'retry')
    workers.wait_for_log('serving topic', count=count)
    retry.wait_for_log('Retry scheduler started')
    return workers, retry


def create(cluster, count=1, meta=None, order_type=TYPE):
    """Create orders with ``order create``; return their ids."""
    args = ['order', 'create', '--type', order_type, '--count', str(count)]
    if meta:
        args += ['--meta', json.dumps(meta)]
    return [order['id'] for order in cluster.manage_json(*args)]


def runs(cluster):
    """``{(order, step): [run, ...]}`` of the recorded runs, by start."""
    found = collections.defaultdict(list)
    for call in sorted(test_plugin.read_log(cluster.plugin_log),
                       key=lambda call: call['started']):
        found[call['order'], call['step']].append(call)
    return found


def order(database, order_id):
    """The order row (detached from its session)."""
    with database.session() as session:
        row = orders.get(session, order_id)
        session.expunge(row)
        return row


def status(database, order_id):
    """The status of one order."""
    return order(database, order_id).status


def step_rows(database, order_id):
    """``{name: OrderStep}`` of one order (detached)."""
    with database.session() as session:
        rows = steps.for_order(session, order_id)
        session.expunge_all()
        return rows


def wait_status(database, order_ids, wanted, timeout):
    """Wait until every order of ``order_ids`` has status ``wanted``."""
    processes.wait_for(
        lambda: all(status(database, order_id) == wanted
                    for order_id in order_ids),
        timeout, '%d order(s) %s' % (len(order_ids), wanted))


def wait_running(database, order_id, step, timeout=30):
    """Wait until a worker claimed ``step``; return its owner."""
    return processes.wait_for(
        lambda: step_rows(database, order_id)[step].owner, timeout,
        'a worker to claim %s of order %s' % (step, order_id))


def services(database):
    """The rows of ``services``, one per running process (detached)."""
    with database.session() as session:
        rows = services_repository.list_services(session)
        session.expunge_all()
        return rows


def overlaps(first, second):
    """True if two recorded runs were running at one moment."""
    return first['started'] < second['ended'] and \
        second['started'] < first['ended']
