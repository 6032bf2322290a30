"""barbican-retry-demo: the whole blueprint in one process, no servers.

Runs the worker and the retry scheduler side by side in this process, on
a SQLite file and oslo.messaging's in-process ``fake://`` transport, and
creates orders of both installed types (``certificate``, two steps in
sequence; ``fanout``, steps in parallel that join) the way an API server
would. It prints each order's progress (its steps queued, running,
retrying at T; ACTIVE) as it happens.
This is the one module that imports both sides (the one exception named
in ``tests/unit/test_boundaries.py``): the worker never imports the
scheduler, and the scheduler imports only the layer the two share.
"""

import argparse
import os
import sys
import tempfile
import time

from oslo_config import cfg
from oslo_log import log as logging
from oslo_utils import timeutils

from scheduler import conf as scheduler_conf
from scheduler import service as scheduler_service
from worker.common import order_actions
from worker import conf as worker_conf
from worker.conf import order_types as type_options
from worker.db import migration
from worker.db import models
from worker.db import orders
from worker.db import retry_tasks
from worker.db import session as db_session
from worker.db import steps as order_steps
from worker import order_types
from worker import rpc
from worker import rpcapi
from worker import service as worker_service


def _parse_args(argv):
    parser = argparse.ArgumentParser(prog='barbican-retry-demo',
                                     description=__doc__.splitlines()[0])
    parser.add_argument('--orders', type=int, default=5,
                        help='Orders of each type to create (default 5).')
    parser.add_argument('--delay', type=int, default=2,
                        help='[simple_certificate] '
                             'delay_before_update_seconds (default 2).')
    parser.add_argument('--period', type=int, default=1,
                        help='[scheduler] schedule_period_seconds '
                             '(default 1).')
    parser.add_argument('--timeout', type=float, default=50.0,
                        help='Give up after this many seconds.')
    parser.add_argument('--state-dir', default=None,
                        help='Where the SQLite file goes (default: a '
                             'temporary directory).')
    return parser.parse_args(argv)


def _configure(args, state_dir):
    # NOTE: oslo.messaging registers some of its options on the global
    # CONF only, so every command uses it.
    conf = cfg.CONF
    worker_conf.register_opts(conf)
    scheduler_conf.register_opts(conf)
    logging.register_options(conf)
    conf([], project='barbican-retry', prog='barbican-retry-demo')
    conf.set_override('connection', 'sqlite:///%s' % os.path.join(
        state_dir, 'demo.sqlite'), group='database')
    conf.set_override('schedule_period_seconds', args.period, 'scheduler')
    conf.set_override('delay_before_update_seconds', args.delay,
                      'simple_certificate')
    # One in four orders meets an unavailable CA once, to show R-2.
    for workflow in order_types.installed().values():
        for step in workflow.steps:
            group = type_options.step_group(workflow.type_name, step.name)
            conf.set_override('backoff_base_seconds', 1.0, group)
            conf.set_override('backoff_max_seconds', 2.0, group)
    conf.set_override('default_log_levels', ['oslo_messaging=WARNING',
                                             'stevedore=WARNING'])
    conf.set_override('log_file', os.path.join(state_dir, 'demo.log'))
    logging.setup(conf, 'barbican-retry-demo')
    return conf


def _describe(order, steps, retries):
    if order.status == models.PENDING:
        return 'PENDING, %s' % ', '.join(
            '%s %s%s' % (name, order_actions.step_status(
                step, retries.get((order.id, name))),
                ' at %s' % retries[(order.id, name)].retry_at.strftime(
                    '%H:%M:%S.%f')[:-3]
                if (order.id, name) in retries else '')
            for name, step in steps.items()
            if step.status == models.STEP_PENDING)
    if order.status == models.ERROR:
        return 'ERROR: %s' % order.error_reason
    return order.status


def _watch(database, order_ids, deadline):
    """Print each change of state; return the final status counts."""
    seen = {}
    while True:
        with database.session() as session:
            retries = {(task.order_id, task.retry_task): task
                       for task in retry_tasks.list_tasks(session)}
            current = {order_id: orders.get(session, order_id)
                       for order_id in order_ids}
            steps = order_steps.for_orders(session, order_ids)
        for order_id, order in current.items():
            text = _describe(order, steps[order_id], retries)
            if seen.get(order_id) != text:
                seen[order_id] = text
                print('%s order %s: %s' % (
                    timeutils.utcnow().strftime('%H:%M:%S'),
                    order_id[:8], text), flush=True)
        counts = {status: 0 for status in models.ORDER_STATUSES}
        for order in current.values():
            counts[order.status] += 1
        if not (counts[models.PENDING] or counts[models.CANCELLING]) or \
                time.monotonic() > deadline:
            return counts
        time.sleep(0.2)


def main(argv=None):
    """Run the all-in-one demo; exit 0 when every order is ACTIVE."""
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    state_dir = args.state_dir or tempfile.mkdtemp(prefix='barbican-retry-')
    conf = _configure(args, state_dir)
    database = db_session.Database.from_conf(conf)
    migration.upgrade(database.engine)
    transport = rpc.get_transport(conf, url='fake://')
    services = [worker_service.WorkerService(conf, transport),
                scheduler_service.SchedulerService(conf, transport)]
    for svc in services:
        svc.start()
    print('demo: %d certificate orders and %d fanout orders, delay %ds, '
          'scheduler period %ds; log in %s'
          % (args.orders, args.orders, args.delay, args.period,
             os.path.join(state_dir, 'demo.log')), flush=True)
    api = rpcapi.WorkerAPI.from_transport(transport, conf.worker.topic)
    created = []
    for type_name in ('certificate', 'fanout'):
        for index in range(args.orders):
            created.extend(order_actions.create_orders(
                database, api, order_types.get(type_name),
                {'unavailable_attempts': 1} if index % 4 == 3 else {}, 1,
                timeutils.utcnow()))
    try:
        counts = _watch(database, [o.id for o in created],
                        time.monotonic() + args.timeout)
    finally:
        for svc in reversed(services):
            svc.stop()
        database.dispose()
    print('demo: %d orders ACTIVE, %d PENDING, %d ERROR' % (
        counts[models.ACTIVE], counts[models.PENDING],
        counts[models.ERROR]), flush=True)
    return 0 if counts[models.ACTIVE] == len(created) else 1


if __name__ == '__main__':
    sys.exit(main())
