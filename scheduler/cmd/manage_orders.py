"""``barbican-retry-manage order …``: create and inspect orders."""

import json

from cliff import command
from cliff import lister
from cliff import show
from oslo_log import log as logging
from oslo_utils import timeutils

from scheduler.cmd import display

from worker.db import models
from worker.db import orders
from worker.db import retry_tasks

LOG = logging.getLogger(__name__)

ORDER_COLUMNS = ('id', 'type', 'status', 'step', 'generation', 'attempt',
                 'error_reason', 'meta', 'created_at', 'updated_at')


class CreateOrders(lister.Lister):
    """Create PENDING orders and cast them to the worker pool.

    Does what an API server does: the orders are committed first, then
    each one's first step is cast.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--type', required=True,
                            choices=['certificate'],
                            help='Order type.')
        parser.add_argument('--count', type=int, default=1,
                            help='How many orders to create (default 1).')
        parser.add_argument('--meta', default='{}', type=json.loads,
                            help='Order metadata as a JSON object, e.g. '
                                 '\'{"unavailable_attempts": 2}\'.')
        return parser

    def take_action(self, parsed_args):
        if parsed_args.count < 1:
            raise ValueError('--count must be at least 1')
        if not isinstance(parsed_args.meta, dict):
            raise ValueError('--meta must be a JSON object')
        now = timeutils.utcnow()
        database = self.app.database
        with database.session() as session, session.begin():
            created = [orders.create(session, parsed_args.type,
                                     parsed_args.meta, now)
                       for _ in range(parsed_args.count)]
        self._dispatch(created)
        return (('id', 'status'),
                [(order.id, order.status) for order in created])

    def _dispatch(self, created):
        # The orders are committed: a cast that fails loses nothing, the
        # retry daemon dispatches them after dispatch_deadline_seconds.
        failed = 0
        try:
            api = self.app.worker_api()
            for order in created:
                try:
                    api.process_type_order(order.id, order.generation)
                except Exception:
                    failed += 1
        except Exception:
            failed = len(created)
        if failed:
            LOG.warning('%d of %d casts failed; the retry daemon will '
                        'dispatch those orders after [scheduler] '
                        'dispatch_deadline_seconds', failed, len(created))


class ShowOrder(show.ShowOne):
    """Show one order."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('order_id', help='Order id.')
        return parser

    def take_action(self, parsed_args):
        database = self.app.database
        with database.session() as session:
            order = orders.get(session, parsed_args.order_id)
        if order is None:
            raise LookupError('no order %s' % parsed_args.order_id)
        return ORDER_COLUMNS, display.row(order, ORDER_COLUMNS)


class ListOrders(lister.Lister):
    """List orders, oldest first."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--status', choices=models.ORDER_STATUSES,
                            help='Only orders in this status.')
        parser.add_argument('--limit', type=int, default=None,
                            help='At most this many orders.')
        return parser

    def take_action(self, parsed_args):
        database = self.app.database
        with database.session() as session:
            found = orders.list_orders(session, parsed_args.status,
                                       parsed_args.limit)
        columns = ('id', 'type', 'status', 'step', 'error_reason')
        return columns, [display.row(order, columns) for order in found]


class CancelOrder(command.Command):
    """Cancel a PENDING order: it goes to ERROR, its retries are removed.

    A step of the order still running on a worker finds its token stale
    when it finishes, and its result has no effect.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('order_id', help='Order id.')
        parser.add_argument('--reason', default='cancelled by an operator',
                            help='Recorded as the error reason.')
        return parser

    def take_action(self, parsed_args):
        database = self.app.database
        with database.session() as session, session.begin():
            if not orders.cancel(session, parsed_args.order_id,
                                 timeutils.utcnow(), parsed_args.reason):
                raise LookupError('no PENDING order %s'
                                  % parsed_args.order_id)
            retry_tasks.delete_for_order(session, parsed_args.order_id)
        self.app.stdout.write('order %s cancelled\n' % parsed_args.order_id)
