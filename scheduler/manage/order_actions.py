"""``barbican-retry-manage order cancel`` and ``order resume``: the
operator's changes to one order, or to the ERROR orders that match."""

from oslo_context import context as context_module

from scheduler.manage import arguments
from scheduler.manage import base
from scheduler.manage import display
from scheduler.manage import orders as order_commands
from worker import api


class CancelOrder(order_commands.OneOrder, base.Command):
    """Cancel a PENDING order.

    Its pending steps never start, the claims of its running steps are
    revoked (their results are discarded) and its retry rows are removed.
    The order is CANCELLED, or CANCELLING until its type's compensation
    step has run.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--reason', default='cancelled by an operator',
                            help='Recorded as the order\'s error reason.')
        return parser

    def take_action(self, parsed_args):
        orders = order_commands.order_api(self.app, casts=True)
        order = orders.find(parsed_args.order_id, all_projects=True)
        cancelled = orders.cancel(order.id, all_projects=True,
                                  reason=parsed_args.reason,
                                  requested_by=order_commands.operator())
        self.write('order %s %s\n' % (
            order.id, 'cancelling: compensation %s started'
            % api.order_type_info(order.type).compensation
            if cancelled.status == api.CANCELLING else 'cancelled'))


class ResumeOrders(base.Lister):
    """Resume an ERROR order, or the ERROR orders that match (--status
    ERROR, --project or both).

    The order goes back to PENDING: its DONE steps stay DONE, the others
    run again from their first attempt with the same idempotency keys.
    Prints what it resumed; exits non-zero if an order could not be
    resumed (one that is not ERROR, with its status).
    """

    _failed = False

    def run(self, parsed_args):
        """Print what was resumed; exit 1 if an order was not."""
        status = super().run(parsed_args)
        return 1 if self._failed else status

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        which = parser.add_mutually_exclusive_group()
        which.add_argument('order_id', nargs='?',
                           help='Order id, or a unique prefix of one.')
        which.add_argument('--status', type=arguments.error_status,
                           help='Resume the orders in this status, those '
                                'changed least recently first: ERROR only '
                                '(what --project alone resumes too).')
        parser.add_argument('--type', dest='order_type',
                            help='With --status or --project: only the '
                                 'orders of this type.')
        parser.add_argument('--since', type=arguments.iso_time,
                            metavar='TIME',
                            help='With --status or --project: only the '
                                 'orders that went to ERROR at or after '
                                 'TIME (ISO 8601, UTC unless it says '
                                 'otherwise).')
        parser.add_argument('--limit', type=arguments.resume_limit,
                            default=None,
                            help='With --status or --project: at most this '
                                 'many orders (1 to %d, default 100).'
                                 % api.MAX_LIMIT)
        parser.add_argument('--project',
                            help='Only the orders of this project; without '
                                 'an order id, its ERROR orders.')
        return parser

    def take_action(self, parsed_args):
        if parsed_args.order_id is None and parsed_args.status is None \
                and parsed_args.project is None:
            raise ValueError('which orders? An order id, --status ERROR '
                             'or --project PROJECT')
        if parsed_args.order_id is not None and any(
                value is not None for value in (
                    parsed_args.order_type, parsed_args.since,
                    parsed_args.limit)):
            raise ValueError('--type, --since and --limit select ERROR '
                             'orders: they go with --status or --project, '
                             'not with an order id')
        orders = order_commands.order_api(self.app, casts=True)
        context = context_module.RequestContext(
            user_name='%s (barbican-retry-manage)'
            % order_commands.operator().os_user)
        who = dict(context=context,
                   requested_by=order_commands.operator(context))
        columns = ('id', 'type', 'project_id', 'status')
        if parsed_args.order_id is not None:
            order = orders.find(parsed_args.order_id,
                                **order_commands.projects(parsed_args.project))
            resumed = orders.resume(order.id, all_projects=True, **who)
            return columns, [display.row(resumed, columns)]
        done = orders.resume_many(
            order_type=parsed_args.order_type, since=parsed_args.since,
            limit=parsed_args.limit or 100, **who,
            **order_commands.projects(parsed_args.project))
        for order_id, why in sorted(done.failed.items()):
            self.app.stderr.write(display.escape(
                'order %s not resumed: %s' % (order_id, why)) + '\n')
        self._failed = bool(done.failed)
        return columns, [display.row(order, columns)
                         for order in done.resumed]
