"""The ground floor's values (``worker.values``)."""

import ast
import dataclasses
import pathlib

import pytest

from worker import values


class _Row:
    def __init__(self, request_id, global_request_id):
        self.request_id = request_id
        self.global_request_id = global_request_id


def test_an_orders_ids_are_read_from_its_row():
    assert values.request_ids_of(_Row('req-1', None)) == values.RequestIds(
        'req-1', None)
    assert values.request_ids_of(_Row(None, 'req-g')) == values.RequestIds(
        None, 'req-g')
    assert values.request_ids_of(_Row(None, None)) is None


def test_a_step_travels_as_its_name_order_and_generation_only():
    step = values.StepRef('issue', 'o-1', 4, values.RequestIds('req-1'),
                          'fanout', {'traceparent': 'x'})
    assert step.wire() == ['issue', 'o-1', 4]


def test_an_event_is_a_frozen_value():
    event = values.Event('order.active', 'ACTIVE')
    assert (event.step, event.detail) == (None, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.status = 'ERROR'


def test_the_values_import_nothing_of_the_project():
    # Below every layer, the utilities of worker.common included.
    tree = ast.parse(pathlib.Path(values.__file__).read_text())
    imported = [alias.name for node in ast.walk(tree)
                if isinstance(node, ast.Import) for alias in node.names]
    imported += [node.module for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom)]
    assert 'typing' in imported
    assert [name for name in imported
            if name.split('.')[0] in ('worker', 'scheduler')] == []
