"""``barbican-retry-manage order bulk cancel|resume|reprioritize|pause``:
one action on every order that matches the filters, through
``OrderAPI.bulk``."""

import getpass
import socket

from oslo_context import context as context_module

from scheduler.manage import arguments
from scheduler.manage import base
from scheduler.manage import display
from scheduler.manage import orders
from worker import api

#: The actions, as ``OrderAPI.bulk`` names them.
ACTIONS = ('cancel', 'resume', 'reprioritize', 'pause')


class BulkOrders(base.Command):
    """Cancel, resume, reprioritize or pause every order that matches.

    The filters combine (all must hold); without --status, the action's
    own statuses (cancel and pause: PENDING, resume: ERROR, reprioritize:
    PENDING and CANCELLING). The orders are changed in batches of
    [api_limits] bulk_batch_size, each in a short transaction of its own,
    while the workers go on with the others; at most --limit orders, or
    [api_limits] max_bulk_orders. Prints how many orders matched and how
    many were changed; --dry-run changes nothing. Exits 1 if an order
    could not be changed.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('action', choices=ACTIONS,
                            help='What to do to each order.')
        parser.add_argument('--type', dest='order_type',
                            help='Only the orders of this type.')
        parser.add_argument('--status', choices=api.ORDER_STATUSES,
                            help='Only the orders in this status, one the '
                                 'action applies to.')
        parser.add_argument('--project',
                            help='Only the orders of this project.')
        parser.add_argument('--since', type=arguments.iso_time,
                            metavar='ISO8601',
                            help='Only the orders created at or after this '
                                 'time (UTC unless it says otherwise).')
        parser.add_argument('--until', type=arguments.iso_time,
                            metavar='ISO8601',
                            help='Only the orders created before this time.')
        arguments.add_meta_filter(parser)
        parser.add_argument('--priority', type=arguments.priority,
                            help='reprioritize: the new priority (%d to %d).'
                                 % (api.MIN_PRIORITY, api.MAX_PRIORITY))
        parser.add_argument('--limit', type=arguments.list_limit,
                            help='Change at most this many orders.')
        parser.add_argument('--reason',
                            help='cancel: recorded as each order\'s error '
                                 'reason (default "cancelled in bulk by an '
                                 'operator"); pause: as each pause\'s '
                                 '(default "paused in bulk by an '
                                 'operator").')
        parser.add_argument('--dry-run', action='store_true',
                            help='Change nothing: count the orders that '
                                 'match and that would be changed.')
        return parser

    def take_action(self, parsed_args):
        context = context_module.RequestContext(
            user_name='%s@%s (barbican-retry-manage)' % (
                getpass.getuser(), socket.gethostname()))
        done = orders.order_api(self.app, casts=True).bulk(
            parsed_args.action, order_type=parsed_args.order_type,
            status=parsed_args.status, since=parsed_args.since,
            until=parsed_args.until,
            meta=api.parse_meta_filters(parsed_args.meta) or None,
            priority=parsed_args.priority, limit=parsed_args.limit,
            dry_run=parsed_args.dry_run,
            reason=parsed_args.reason or '%s in bulk by an operator' % (
                'paused' if parsed_args.action == 'pause' else 'cancelled'),
            context=context, **orders.projects(parsed_args.project))
        for order_id, why in sorted(done.failed.items()):
            self.app.stderr.write(display.escape(
                'order %s not changed: %s' % (order_id, why)) + '\n')
        if done.dry_run:
            self.write('%d order(s) matched; %s would change %d (dry run, '
                       'nothing changed)\n' % (done.matched, done.action,
                                               done.changed))
        else:
            self.write('%d order(s) matched; %d changed (%s)\n'
                       % (done.matched, done.changed, done.action))
        return 1 if done.failed else 0
