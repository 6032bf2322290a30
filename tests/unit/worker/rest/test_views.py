"""An order over REST is the order ``order show -f json`` prints: the
same fields in the same order, the same values."""

import datetime

from scheduler.manage import display
from scheduler.manage import order_columns
from scheduler.manage import orders as order_commands
from worker.osc import orders as osc_orders
from worker.rest import views


def test_the_fields_are_the_operator_commands():
    # Repeated in worker.rest.views rather than shared: the order commands
    # import worker.api alone (tests/unit/test_boundaries.py).
    assert views.ORDER_FIELDS == order_commands.ORDER_COLUMNS
    assert views.STEP_FIELDS == order_columns.STEP_FIELDS
    assert views.RUN_FIELDS == order_commands.RUN_COLUMNS
    # And ``openstack retry order history``'s, which reads them.
    assert osc_orders.RUN_COLUMNS == order_commands.RUN_COLUMNS


def test_values_are_printed_as_the_operator_commands_print_them():
    for value in (datetime.datetime(2026, 11, 28, 9, 30, 1, 123456),
                  {'b': 1, 'a': [1, 2]}, None, 3, 'text'):
        assert views.value(value) == display.value(value)
