"""``barbican-retry-manage order …``: create, inspect and cancel orders."""

import argparse
import json

from cliff import columns as cliff_columns
from cliff import command
from cliff import lister
from cliff import show
from oslo_log import log as logging

from scheduler.manage import display
from scheduler.manage import explain
from worker.common import order_actions
from worker.db import models
from worker.notifications import subscriptions
from worker import order_types

LOG = logging.getLogger(__name__)

ORDER_COLUMNS = ('id', 'type', 'status', 'priority', 'error_reason',
                 'meta', 'created_at', 'updated_at')

STEP_FIELDS = ('name', 'after', 'status', 'attempt', 'owner', 'started_at',
               'finished_at', 'next_retry_at', 'last_error')


class StepsColumn(cliff_columns.FormattableColumn):
    """An order's steps: one line each in a table, a list in JSON."""

    def human_readable(self):
        """One line per step."""
        return '\n'.join(
            '%s: %s%s%s' % (
                step['name'], step['status'],
                ' (after %s)' % ', '.join(step['after'])
                if step['after'] else '',
                ', attempt %d' % step['attempt'] if step['attempt'] else '')
            for step in self._value)

    def machine_readable(self):
        """The list of steps, each a dict of ``STEP_FIELDS``."""
        return self._value


def describe_steps(workflow, rows, retries):
    """The ``steps`` list of ``order show``: one dict per step.

    :param rows: ``{name: OrderStep}`` of the order.
    :param retries: ``{name: OrderRetryTask}`` of the order.
    """
    declared = list(workflow.steps) if workflow else []
    if workflow and workflow.compensation and \
            workflow.compensation.name in rows:
        declared.append(workflow.compensation)
    after = {step.name: list(step.after) for step in declared}
    names = [step.name for step in declared] + sorted(
        set(rows) - set(after))
    result = []
    for name in names:
        row = rows.get(name)
        retry = retries.get(name)
        result.append({
            'name': name,
            'after': after.get(name, []),
            'status': (order_actions.step_status(row, retry) if row
                       else 'NOT CREATED'),
            'attempt': row.attempt if row else 0,
            'owner': row.owner if row else None,
            'started_at': display.value(row.started_at) if row else None,
            'finished_at': display.value(row.finished_at) if row else None,
            'next_retry_at': (display.value(retry.retry_at)
                              if retry and not retry.parked else None),
            'last_error': row.last_error if row else None,
        })
    return result


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


def priority(text):
    """An argparse type: ``text`` as an order priority."""
    try:
        return models.check_priority(int(text))
    except ValueError:
        raise argparse.ArgumentTypeError(
            'must be an integer from %d to %d, not %r'
            % (models.MIN_PRIORITY, models.MAX_PRIORITY, text)) from None


class _OneOrder:
    """Mixin: the ``order_id`` argument."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('order_id', help='Order id.')
        return parser


class CreateOrders(lister.Lister):
    """Create PENDING orders and cast their first steps to the workers.

    Does what an API server does: the orders are committed first, then
    their first steps are cast, in messages of up to ``[scheduler]
    rows_per_cast`` steps.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--type', required=True,
                            help='Order type (see "order type list").')
        parser.add_argument('--count', type=int, default=1,
                            help='How many orders to create (default 1).')
        parser.add_argument('--meta', default='{}', type=json.loads,
                            help='Order metadata as a JSON object, e.g. '
                                 '\'{"unavailable_attempts": 2}\'.')
        parser.add_argument('--priority', type=priority, default=0,
                            help='%d to %d, higher sooner (default 0): when '
                                 'more retries are due than a pass of the '
                                 'retry daemon casts, those of orders of '
                                 'higher priority are cast first.'
                                 % (models.MIN_PRIORITY,
                                    models.MAX_PRIORITY))
        parser.add_argument('--callback-url', metavar='URL',
                            help='Send each order\'s events (its status '
                                 'changes, at least once and in order) to '
                                 'this URL as signed POSTs. Its host must '
                                 'be in [notifications] allowed_hosts.')
        return parser

    def take_action(self, parsed_args):
        if parsed_args.count < 1:
            raise ValueError('--count must be at least 1')
        if not isinstance(parsed_args.meta, dict):
            raise ValueError('--meta must be a JSON object')
        workflow = order_types.get(parsed_args.type)
        notify = subscriptions.urls_for_order(self.app.conf,
                                              parsed_args.callback_url)
        created = order_actions.create_orders(
            self.app.database, worker_api_or_none(self.app), workflow,
            parsed_args.meta, parsed_args.count, self.app.now(),
            rows_per_cast=self.app.conf.scheduler.rows_per_cast,
            priority=parsed_args.priority, notify=notify)
        return (('id', 'type', 'status', 'priority'),
                [(order.id, order.type, order.status, order.priority)
                 for order in created])


class ShowOrder(_OneOrder, show.ShowOne):
    """Show one order and its steps."""

    def take_action(self, parsed_args):
        database = self.app.database
        repositories = database.repositories
        with database.session() as session:
            order = repositories.orders.get(session, parsed_args.order_id)
            if order is None:
                raise LookupError('no order %s' % parsed_args.order_id)
            rows = repositories.steps.for_order(session, order.id)
            retries = order_actions.retry_rows_by_step(
                repositories.retry_tasks.list_tasks(session,
                                                    order_id=order.id))
        try:
            workflow = order_types.get(order.type)
        except order_types.UnknownOrderType:
            workflow = None
        columns = ORDER_COLUMNS + ('steps',)
        return columns, display.row(order, ORDER_COLUMNS) + (
            StepsColumn(describe_steps(workflow, rows, retries)),)


class ExplainOrder(_OneOrder, show.ShowOne):
    """Say in one sentence why an order has not moved."""

    def take_action(self, parsed_args):
        why = explain.explain_order(self.app.database, self.app.conf,
                                    parsed_args.order_id,
                                    self.app.now())
        return ('id', 'status', 'why'), (parsed_args.order_id, why.status,
                                         why.sentence)


class ListOrderTypes(lister.Lister):
    """List the installed order types, their steps and metadata schema."""

    def take_action(self, parsed_args):
        rows = []
        for name, workflow in order_types.installed().items():
            rows.append((name, StepsOfType(
                [{'name': step.name, 'after': list(step.after)}
                 for step in workflow.steps]),
                workflow.compensation.name if workflow.compensation
                else None, MetaSchemaOfType(workflow.meta_schema)))
        return ('name', 'steps', 'compensation', 'meta_schema'), rows


class StepsOfType(cliff_columns.FormattableColumn):
    """A type's declared steps: ``a, b <- a`` in a table, a list in JSON."""

    def human_readable(self):
        """The steps in declaration order, each with what it comes after.
        """
        return ', '.join(
            '%s <- %s' % (step['name'], '+'.join(step['after']))
            if step['after'] else step['name'] for step in self._value)

    def machine_readable(self):
        """The list of steps, each with ``name`` and ``after``."""
        return self._value


class MetaSchemaOfType(cliff_columns.FormattableColumn):
    """A type's ``meta_schema``: its keys in a table, the schema in JSON."""

    def human_readable(self):
        """The top-level keys it declares, ``...`` if it allows others.

        ``-`` for a type with no schema.
        """
        if self._value is None:
            return '-'
        keys = list(self._value.get('properties', {}))
        if self._value.get('additionalProperties', True) is not False:
            keys.append('...')
        return ', '.join(keys)

    def machine_readable(self):
        """The JSON Schema as declared, or None."""
        return self._value


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
            found = database.repositories.orders.list_orders(
                session, parsed_args.status, parsed_args.limit)
        columns = ('id', 'type', 'status', 'error_reason')
        return columns, [display.row(order, columns) for order in found]


class CancelOrder(_OneOrder, command.Command):
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
        database = self.app.database
        with database.session() as session:
            order = database.repositories.orders.get(session,
                                                     parsed_args.order_id)
        if order is None or order.status != models.PENDING:
            raise LookupError('no PENDING order %s' % parsed_args.order_id)
        cancelled = order_actions.cancel_order(
            database, worker_api_or_none(self.app),
            order_types.get(order.type), order.id, parsed_args.reason,
            self.app.now())
        if cancelled is None:
            raise LookupError('no PENDING order %s' % parsed_args.order_id)
        self.app.stdout.write('order %s %s\n' % (
            order.id, 'cancelling: compensation %s started'
            % cancelled.compensation.step if cancelled.compensation
            else 'cancelled'))
