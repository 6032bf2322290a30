"""``barbican-retry-manage order …``: create and inspect orders, and show
their history (cancel and resume: ``scheduler.manage.order_actions``)."""

import getpass
import socket

from oslo_context import context as context_module
from oslo_log import log as logging

from scheduler.manage import arguments
from scheduler.manage import base
from scheduler.manage import display
from scheduler.manage import explain
from scheduler.manage import order_columns
from worker import api

LOG = logging.getLogger(__name__)

ORDER_COLUMNS = ('id', 'type', 'status', 'project_id', 'priority',
                 'error_reason', 'meta', 'idempotency_key', 'request_id',
                 'global_request_id', 'schedule_id', 'created_at',
                 'updated_at', 'not_before', 'workflow_version')

#: The columns of ``order history``: those of ``api.StepRun`` an operator
#: reads.
RUN_COLUMNS = ('step', 'attempt', 'worker', 'started_at', 'finished_at',
               'result', 'error', 'requested_by')


def operator(context=None):
    """The ``api.Requester`` of an operator command: the OS user who
    runs it, on this host (and the request id of its ``context``)."""
    return api.Requester.operator(
        '%s@%s' % (getpass.getuser(), socket.gethostname()),
        context.request_id if context is not None else None)


def order_api(app, casts=False):
    """An ``api.OrderAPI`` on the app's database and configuration.

    :param casts: the commands that start steps get the app's RPC client
        (or, without one, leave the casts to the retry daemon, which
        dispatches the steps after its dispatch deadline), and its
        announcer of orders on the bus (``app.announcer``).
    """
    return api.OrderAPI(app.database, app.conf,
                        worker_api_or_none(app) if casts else None,
                        now=app.now,
                        rows_per_cast=app.conf.scheduler.rows_per_cast,
                        announcer=app.announcer() if casts else None)


def projects(project):
    """The scope of an operator's command in ``worker.api``'s words: its
    ``--project``, or without one every project (``all_projects=True``),
    which the API never assumes for a caller that gives neither."""
    if project is None:
        return {'all_projects': True}
    return {'project_id': project}


def worker_api_or_none(app):
    """The app's RPC client of the workers, or None if there is none.

    The orders are written all the same: what is not cast is dispatched by
    the retry daemon after its dispatch deadline.
    """
    try:
        return app.worker_api()
    except Exception as exc:
        LOG.warning('No RPC client (%s); the retry daemon will dispatch '
                    'the steps', exc)
        return None


class OneOrder:
    """Mixin: the ``order_id`` argument."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('order_id',
                            help='Order id, or a unique prefix of one.')
        return parser


class CreateOrders(base.Lister):
    """Create PENDING orders and cast their first steps to the workers.

    Does what an API server does, through ``worker.api``: the orders are
    committed first, then their first steps are cast, in messages of up
    to ``[scheduler] rows_per_cast`` steps.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--type', required=True,
                            help='Order type (see "order type list").')
        parser.add_argument('--count', type=int, default=1,
                            help='How many orders to create (default 1).')
        parser.add_argument('--meta', default={},
                            type=arguments.meta_json, metavar='JSON|@FILE',
                            help='Order metadata as a JSON object, e.g. '
                                 '\'{"unavailable_attempts": 2}\', or '
                                 '@FILE to read it from FILE (@- from '
                                 'stdin); its type\'s meta_schema must '
                                 'accept it.')
        parser.add_argument('--project', default=api.DEFAULT_PROJECT,
                            help='The project that owns the orders '
                                 '(default %r).' % api.DEFAULT_PROJECT)
        parser.add_argument('--idempotency-key', metavar='KEY',
                            help='Create the order once: the same command '
                                 'again (same type, meta, priority and '
                                 'callback URL) shows the order made the '
                                 'first time; a different one with this '
                                 'key is refused. Only with --count 1.')
        parser.add_argument('--global-request-id', metavar='req-UUID',
                            type=arguments.global_request_id,
                            help='The request id of the request this '
                                 'comes from, kept with the orders and '
                                 'logged with every line about them.')
        parser.add_argument('--priority', default=0, type=arguments.priority,
                            help='%d to %d, higher sooner (default 0): when '
                                 'more retries are due than a pass of the '
                                 'retry daemon casts, those of orders of '
                                 'higher priority are cast first.'
                                 % (api.MIN_PRIORITY, api.MAX_PRIORITY))
        parser.add_argument('--callback-url', metavar='URL',
                            action='append', default=[],
                            help='Send each order\'s events (its status '
                                 'changes, at least once and in order) to '
                                 'this URL as signed POSTs (may be '
                                 'repeated). Its host must be in '
                                 '[notifications] allowed_hosts.')
        parser.add_argument('--not-before', metavar='TIME',
                            type=arguments.start_time,
                            help='Start the orders at this time, an ISO '
                                 '8601 time with its zone such as '
                                 '2026-12-01T09:00:00Z or '
                                 '2026-12-01T10:00:00+01:00 (at most ten '
                                 'years ahead): they are PENDING until '
                                 'then, their first steps waiting in the '
                                 'retry table. A time past: at once.')
        return parser

    def take_action(self, parsed_args):
        if parsed_args.count < 1:
            raise ValueError('--count must be at least 1')
        if parsed_args.idempotency_key is not None and \
                parsed_args.count != 1:
            raise ValueError('--idempotency-key names one order: it cannot '
                             'go with --count %d' % parsed_args.count)
        context = context_module.RequestContext(
            global_request_id=parsed_args.global_request_id)
        orders = order_api(self.app, casts=True)
        request = dict(project_id=parsed_args.project,
                       priority=parsed_args.priority,
                       callback_urls=parsed_args.callback_url,
                       context=context, not_before=parsed_args.not_before)
        if parsed_args.count == 1:
            created = [orders.create(
                parsed_args.type, parsed_args.meta,
                idempotency_key=parsed_args.idempotency_key, **request)]
        else:
            created = orders.create_many(parsed_args.type, parsed_args.meta,
                                         parsed_args.count, **request)
        columns = ('id', 'type', 'status', 'project_id', 'priority',
                   'not_before')
        return columns, [display.row(order, columns) for order in created]


class ShowOrder(OneOrder, base.ShowOne):
    """Show one order and its steps (by its id, or a unique prefix)."""

    def take_action(self, parsed_args):
        order = order_api(self.app).find(parsed_args.order_id,
                                         all_projects=True)
        columns = ORDER_COLUMNS + ('steps',)
        shown = display.row(order, ORDER_COLUMNS) + (
            order_columns.StepsColumn(
                order_columns.describe_steps(order.steps)),)
        if order.paused_by:
            # Only while paused: what scripts test for.
            columns += ('paused_by',)
            shown += (order_columns.PausedByColumn(
                order_columns.describe_pauses(order.paused_by)),)
        return columns, shown


class OrderHistory(OneOrder, base.Lister):
    """List every run of the order's steps that ended, newest last.

    One row a run: its step, attempt, worker (``pid@host``), when it was
    claimed and when it ended, its result (``done``, ``retry``,
    ``failed``, ``taken back``, ``superseded``) and its error. A cancel
    or a resume is a row too (step ``order:cancel`` or ``order:resume``,
    result ``requested``), with who asked in ``requested_by``.
    """

    def take_action(self, parsed_args):
        runs = order_api(self.app).history(parsed_args.order_id,
                                           all_projects=True)
        return RUN_COLUMNS, [display.row(run, RUN_COLUMNS) for run in runs]


class ExplainOrder(OneOrder, base.ShowOne):
    """Say in one sentence why an order has not moved."""

    def take_action(self, parsed_args):
        order = order_api(self.app).find(parsed_args.order_id,
                                         all_projects=True)
        why = explain.explain_order(self.app.database, self.app.conf,
                                    order.id, self.app.now())
        return (('id', 'status', 'why', 'workflow_version'),
                (order.id, why.status, why.sentence, why.version))


class ListOrderTypes(base.Lister):
    """List the installed order types, their steps and metadata schema."""

    def take_action(self, parsed_args):
        rows = []
        for info in api.order_type_infos():
            rows.append((info.name, order_columns.StepsOfType(
                [{'name': step, 'after': list(after)}
                 for step, after in info.steps]),
                info.compensation,
                order_columns.MetaSchemaOfType(info.meta_schema)))
        return ('name', 'steps', 'compensation', 'meta_schema'), rows


#: How many orders ``order list`` shows without ``--limit`` or ``--all``.
DEFAULT_LIST_LIMIT = 100

#: The columns of ``order list``: no ``meta``, which may be large.
LIST_COLUMNS = ('id', 'type', 'status', 'project_id', 'error_reason')


class ListOrders(base.Lister):
    """List orders, oldest first: the first 100, or --limit N, or --all.

    A note on stderr says when the first 100 are not all: --marker and
    the last id shown give the next page.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--status', choices=api.ORDER_STATUSES,
                            help='Only orders in this status.')
        parser.add_argument('--project',
                            help='Only the orders of this project.')
        parser.add_argument('--type', dest='order_type',
                            help='Only the orders of this type.')
        how_many = parser.add_mutually_exclusive_group()
        how_many.add_argument('--limit', type=arguments.list_limit,
                              help='At most this many orders (1 or more; '
                                   'default %d).' % DEFAULT_LIST_LIMIT)
        how_many.add_argument('--all', action='store_true',
                              help='Every order (read %d at a time).'
                                   % api.MAX_LIMIT)
        parser.add_argument('--marker', metavar='ORDER_ID',
                            help='Only the orders after this one (the last '
                                 'of the previous page).')
        arguments.add_meta_filter(parser)
        return parser

    def take_action(self, parsed_args):
        wanted = None if parsed_args.all else (
            parsed_args.limit or DEFAULT_LIST_LIMIT)
        # One more than shown: whether the default limit left some out.
        found = _list_orders(
            order_api(self.app), parsed_args,
            None if wanted is None else wanted + 1)
        # A row each, not the orders: their meta is not kept.
        rows = [display.row(order, LIST_COLUMNS) for order in found]
        if wanted is not None and len(rows) > wanted:
            del rows[wanted:]
            if parsed_args.limit is None:
                self.app.stderr.write(
                    'barbican-retry-manage: the first %d orders; --marker '
                    '%s shows the next ones, --all every one\n'
                    % (wanted, rows[-1][0]))
        return LIST_COLUMNS, rows


def _list_orders(orders, parsed_args, wanted):
    """The orders ``order list`` selects, at most ``wanted`` (None: all),
    read page by page so that no read is long."""
    filters = dict(projects(parsed_args.project),
                   status=parsed_args.status,
                   order_type=parsed_args.order_type,
                   meta=api.parse_meta_filters(parsed_args.meta) or None)
    count, marker = 0, parsed_args.marker
    while wanted is None or count < wanted:
        limit = api.MAX_LIMIT if wanted is None else min(
            api.MAX_LIMIT, wanted - count)
        page = orders.list(limit=limit, marker=marker, with_meta=False,
                           **filters)
        yield from page
        count += len(page)
        if len(page) < limit:
            return
        marker = page[-1].id
