"""``openstack retry order …`` and ``openstack retry order type list``.

The columns are those of ``barbican-retry-manage``'s commands of the same
names, so that ``-f json`` reads the same from either.
"""

import argparse
import json

from osc_lib.cli import format_columns
from osc_lib.command import command

ORDER_COLUMNS = ('id', 'type', 'status', 'project_id', 'priority',
                 'error_reason', 'meta', 'idempotency_key', 'request_id',
                 'global_request_id', 'schedule_id', 'created_at',
                 'updated_at', 'not_before', 'workflow_version', 'steps')
LIST_COLUMNS = ('id', 'type', 'status', 'project_id', 'priority',
                'created_at', 'updated_at')
RUN_COLUMNS = ('step', 'attempt', 'worker', 'started_at', 'finished_at',
               'result', 'error', 'requested_by')
TYPE_COLUMNS = ('name', 'steps', 'compensation', 'meta_schema')


def _retry(app):
    return app.client_manager.retry


def _shown(order):
    """One order as ``show`` prints it: its steps one a line in a table."""
    row = [order.get(column) for column in ORDER_COLUMNS]
    row[-1] = format_columns.ListDictColumn(order.get('steps') or [])
    return ORDER_COLUMNS, tuple(row)


def _json_object(text):
    """``--meta``'s text as a dict; argparse reports what is wrong."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError('not JSON: %s' % exc)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError('not a JSON object')
    return value


class _OneOrder:
    """A command about one order, named by its id."""

    def get_parser(self, prog_name):
        """The order's id."""
        parser = super().get_parser(prog_name)
        parser.add_argument('order_id', metavar='<order-id>',
                            help='the order\'s id')
        return parser


class CreateOrder(command.ShowOne):
    """Create an order of a type; the order as it was stored."""

    def get_parser(self, prog_name):
        """``--type`` and the order's optional fields."""
        parser = super().get_parser(prog_name)
        parser.add_argument('--type', required=True, dest='order_type',
                            help='the order type (openstack retry order '
                                 'type list)')
        parser.add_argument('--meta', default='{}', type=_json_object,
                            help='the order\'s metadata, a JSON object')
        parser.add_argument('--idempotency-key',
                            help='the same key returns the same order '
                                 'instead of a new one')
        parser.add_argument('--priority', type=int,
                            help='higher runs first (default 0)')
        parser.add_argument('--callback-url', action='append',
                            dest='callback_urls', metavar='URL',
                            help='notify this URL of the order\'s changes '
                                 '(repeat for several)')
        parser.add_argument('--not-before', metavar='ISO8601',
                            help='start no earlier than this time (UTC)')
        return parser

    def take_action(self, parsed_args):
        """POST /v1/orders."""
        body = {'type': parsed_args.order_type, 'meta': parsed_args.meta}
        for field in ('priority', 'callback_urls', 'not_before'):
            if getattr(parsed_args, field) is not None:
                body[field] = getattr(parsed_args, field)
        return _shown(_retry(self.app).create_order(
            body, parsed_args.idempotency_key))


class ListOrders(command.Lister):
    """List orders, oldest first."""

    def get_parser(self, prog_name):
        """Filters and paging."""
        parser = super().get_parser(prog_name)
        parser.add_argument('--status', help='only orders in this status')
        parser.add_argument('--type', dest='order_type',
                            help='only orders of this type')
        parser.add_argument('--project',
                            help='only this project\'s orders (admin)')
        parser.add_argument('--limit', type=int,
                            help='at most this many (one page)')
        parser.add_argument('--marker',
                            help='start after the order with this id')
        return parser

    def take_action(self, parsed_args):
        """GET /v1/orders, every page unless ``--limit``."""
        filters = {name: value for name, value in (
            ('status', parsed_args.status), ('type', parsed_args.order_type),
            ('project_id', parsed_args.project)) if value}
        orders = _retry(self.app).list_orders(
            filters, limit=parsed_args.limit, marker=parsed_args.marker)
        return LIST_COLUMNS, [tuple(order.get(column)
                                    for column in LIST_COLUMNS)
                              for order in orders]


class ShowOrder(_OneOrder, command.ShowOne):
    """Show one order and its steps."""

    def take_action(self, parsed_args):
        """GET /v1/orders/{id}."""
        return _shown(_retry(self.app).get_order(parsed_args.order_id))


class CancelOrder(_OneOrder, command.ShowOne):
    """Cancel an order: its compensation runs, if its type has one.

    The order records who asked (the token's user).
    """

    def take_action(self, parsed_args):
        """POST /v1/orders/{id}/cancel."""
        return _shown(_retry(self.app).cancel_order(parsed_args.order_id))


class ResumeOrder(_OneOrder, command.ShowOne):
    """Resume an ERROR order: its unfinished steps run again."""

    def take_action(self, parsed_args):
        """POST /v1/orders/{id}/resume."""
        return _shown(_retry(self.app).resume_order(parsed_args.order_id))


class OrderHistory(_OneOrder, command.Lister):
    """List every run of the order's steps that ended, oldest first."""

    def take_action(self, parsed_args):
        """GET /v1/orders/{id}/history."""
        runs = _retry(self.app).order_history(parsed_args.order_id)
        return RUN_COLUMNS, [tuple(run.get(column) for column in RUN_COLUMNS)
                             for run in runs]


class ListOrderTypes(command.Lister):
    """List the installed order types, their steps and metadata schema."""

    def take_action(self, parsed_args):
        """GET /v1/order-types."""
        return TYPE_COLUMNS, [
            (info['name'], format_columns.ListDictColumn(info['steps']),
             info.get('compensation'),
             format_columns.DictColumn(info.get('meta_schema') or {}))
            for info in _retry(self.app).order_types()]
