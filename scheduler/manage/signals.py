"""``barbican-retry-manage order signal``: send a signal to the step of
an order that waits for it (doc/operations.md "Signals")."""

import dataclasses
import json

from scheduler.manage import arguments
from scheduler.manage import base
from scheduler.manage import display
from scheduler.manage import orders


#: The columns of ``order signal``: those of ``api.Signal``.
SIGNAL_COLUMNS = ('order_id', 'signal_id', 'name', 'payload', 'created_at',
                  'consumed_at', 'consumed_by', 'repeated')


class SignalOrder(base.ShowOne):
    """Send a signal to a PENDING order: the step that waits for it runs
    at once.

    Stored once per order and ``--signal-id``: sent again with the same
    id, nothing changes and the first signal is shown (``repeated``).
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('order_id',
                            help='Order id, or a unique prefix of one.')
        parser.add_argument('name', help='The signal, one a step of the '
                            'order\'s type waits for, e.g. '
                            'certificate.issued.')
        parser.add_argument('--payload', type=arguments.payload_json,
                            default=None, metavar='JSON|@FILE',
                            help='Any JSON value sent with the signal, or '
                                 '@FILE for the one in FILE (@-: stdin).')
        parser.add_argument('--signal-id', metavar='ID',
                            help='The signal\'s key, unique within the '
                                 'order (default: a new UUID): send it '
                                 'again to retry without sending twice.')
        return parser

    def take_action(self, parsed_args):
        api = orders.order_api(self.app, casts=True)
        order = api.find(parsed_args.order_id, all_projects=True)
        sent = api.signal(order.id, parsed_args.name, parsed_args.payload,
                          signal_id=parsed_args.signal_id, all_projects=True)
        # Its JSON text whatever its kind, as meta's.
        return SIGNAL_COLUMNS, display.row(dataclasses.replace(
            sent, payload=json.dumps(sent.payload, sort_keys=True)),
            SIGNAL_COLUMNS)
