"""barbican-retry-demo: the whole blueprint in one process, no servers.

Runs the worker and the retry scheduler side by side in this process
(``worker.local.serve``), on a SQLite file and oslo.messaging's
in-process ``fake://`` transport, and
creates orders of both installed types (``certificate``, two steps in
sequence; ``fanout``, steps in parallel that join) the way an API server
would. It prints each order's progress (its steps queued, running,
retrying at T; ACTIVE) as it happens. It says first where its database,
configuration file and log are, and at the end how to look at an order
with ``barbican-retry-manage`` on that configuration.
This is the one module that imports both sides (the one exception named
in ``tests/unit/test_boundaries.py``): the worker never imports the
scheduler, and the scheduler imports only the layer the two share.
"""

import argparse
import collections
import os
import sys
import tempfile
import time

from oslo_config import cfg
from oslo_log import log as logging
from oslo_utils import timeutils

from scheduler import conf as scheduler_conf
from worker import api as api_module
from worker.cmd import demo_state
from worker import conf as worker_conf
from worker import local


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
                        help='Where the SQLite file, the configuration '
                             'file and the log go (default: a new '
                             'temporary directory, kept at the end).')
    parser.add_argument('--console', action='store_true',
                        help='After the orders, serve the operator console '
                             'over the demo\'s database on 127.0.0.1 '
                             '(no login) until Ctrl-C; the worker and the '
                             'retry daemon keep running meanwhile.')
    parser.add_argument('--console-port', type=int, default=9312,
                        help='The console\'s port (default 9312).')
    return parser.parse_args(argv)


def _configure(args, state_dir):
    """Write the demo's configuration file and load it; return CONF.

    Only the log settings are overrides: ``barbican-retry-manage`` run on
    the file should log to the terminal, not into the demo's log.
    """
    # NOTE: oslo.messaging registers some of its options on the global
    # CONF only, so every command uses it.
    conf = cfg.CONF
    worker_conf.register_opts(conf)
    scheduler_conf.register_opts(conf)
    logging.register_options(conf)
    path = demo_state.write_config(state_dir, args.period, args.delay)
    # The file named: oslo.config then reads no /etc/barbican-retry file.
    conf(['--config-file', path], project='barbican-retry',
         prog='barbican-retry-demo')
    conf.set_override('default_log_levels', ['oslo_messaging=WARNING',
                                             'stevedore=WARNING'])
    conf.set_override('log_file', os.path.join(state_dir, demo_state.LOG))
    logging.setup(conf, 'barbican-retry-demo')
    return conf


#: What the demo's orders belong to.
PROJECT = 'demo'
_OPEN_STEPS = ('QUEUED', 'RUNNING', 'RETRYING', 'PARKED')


def _describe(order):
    """One line of an order's state (an ``api.Order``)."""
    if order.status == api_module.PENDING:
        return 'PENDING, %s' % ', '.join(
            '%s %s%s' % (step.name, step.status,
                         ' at %s' % step.next_retry_at.strftime(
                             '%H:%M:%S.%f')[:-3]
                         if step.next_retry_at else '')
            for step in order.steps if step.status in _OPEN_STEPS)
    if order.status == api_module.ERROR:
        return 'ERROR: %s' % order.error_reason
    return order.status


def _short_ids(order_ids, least=8):
    """Each id cut to the shortest length, from ``least``, that keeps
    every id of ``order_ids`` apart (unique prefixes, as git's)."""
    length = least
    while len({order_id[:length] for order_id in order_ids}) < \
            len(order_ids):
        length += 1
    return {order_id: order_id[:length] for order_id in order_ids}


def _watch(api, order_ids, deadline):
    """Print each change of state; return each order's last status."""
    seen = {}
    short = _short_ids(order_ids)
    while True:
        current = {order_id: api.get(order_id, project_id=PROJECT)
                   for order_id in order_ids}
        for order_id, order in current.items():
            text = _describe(order)
            if seen.get(order_id) != text:
                seen[order_id] = text
                print('%s order %s: %s' % (
                    timeutils.utcnow().strftime('%H:%M:%S'),
                    short[order_id], text), flush=True)
        statuses = {order_id: order.status
                    for order_id, order in current.items()}
        if all(status in api_module.FINAL_STATUSES
               for status in statuses.values()) \
                or time.monotonic() > deadline:
            return statuses
        time.sleep(0.2)


def _print_where(state_dir, config_path, args):
    """Where the demo keeps its state, and how to look into it."""
    print('demo: database %s, configuration %s, log %s'
          % (os.path.join(state_dir, demo_state.DATABASE), config_path,
             os.path.join(state_dir, demo_state.LOG)), flush=True)
    print('demo: list the orders: %s'
          % demo_state.manage_command(config_path, 'order', 'list'),
          flush=True)
    print('demo: %d certificate orders and %d fanout orders, delay %ds, '
          'scheduler period %ds'
          % (args.orders, args.orders, args.delay, args.period), flush=True)


def _print_summary(statuses, retried, config_path, temporary_dir):
    """The command that shows an order, then the counts, last."""
    # The order worth a look: one that did not end ACTIVE, else one that
    # met the unavailable CA and retried.
    unfinished = [order_id for order_id, status in statuses.items()
                  if status != api_module.ACTIVE]
    for shown in (unfinished or retried or list(statuses))[:1]:
        print('demo: look at an order: %s' % demo_state.manage_command(
            config_path, 'order', 'show', shown), flush=True)
    if temporary_dir:
        print('demo: %s is a temporary directory, kept for that; remove it '
              'when done: rm -r %s' % (temporary_dir, temporary_dir),
              flush=True)
    counts = collections.Counter(statuses.values())
    print('demo: %d orders ACTIVE, %d PENDING, %d ERROR' % (
        counts[api_module.ACTIVE], counts[api_module.PENDING],
        counts[api_module.ERROR]), flush=True)


def _create_orders(api, count):
    """``count`` orders of each type, as an API server creates them
    (``worker.api``); return their ids and the ids of those that meet an
    unavailable CA once (one in four, to show R-2)."""
    created, retried = [], []
    for type_name in ('certificate', 'fanout'):
        for index in range(count):
            meta = {'unavailable_attempts': 1} if index % 4 == 3 else {}
            order = api.create(type_name, meta, project_id=PROJECT)
            created.append(order.id)
            retried += [order.id] if meta else []
    return created, retried


def main(argv=None):
    """Run the all-in-one demo; exit 0 when every order is ACTIVE."""
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    # NOTE: never removed: the summary tells the user to look into it.
    temporary_dir = None if args.state_dir else tempfile.mkdtemp(
        prefix='barbican-retry-')
    state_dir = os.path.abspath(args.state_dir or temporary_dir)
    os.makedirs(state_dir, exist_ok=True)
    conf = _configure(args, state_dir)
    config_path = os.path.join(state_dir, demo_state.CONFIG)
    _print_where(state_dir, config_path, args)
    # The configuration's transport is fake://: worker.local shares the
    # API's transport object with the worker and the retry daemon.
    api = api_module.OrderAPI.from_config(conf)
    try:
        with local.serve(api, upgrade_database=True):
            created, retried = _create_orders(api, args.orders)
            statuses = _watch(api, created, time.monotonic() + args.timeout)
            _print_summary(statuses, retried, config_path, temporary_dir)
            if args.console:
                # Only now: the plain demo loads no web stack.
                from worker.cmd import demo_console
                demo_console.serve(conf, api, args.console_port)
    finally:
        api.close()
    return 0 if all(status == api_module.ACTIVE
                    for status in statuses.values()) else 1


if __name__ == '__main__':
    sys.exit(main())
