"""What ``worker.api`` and ``worker.api.schedules`` share, they share
through a home of its own (``worker.common.inputs``), not through each
other's private names; the names doc/api.md cites are importable."""

import ast
import pathlib

import pytest

from worker import api
from worker.common import inputs
from worker.common import targets

ROOT = pathlib.Path(__file__).parents[3]


def test_schedules_use_no_private_name_of_the_orders():
    """``ScheduleAPI`` creates a tick's order through ``OrderAPI.submit``
    and reads what it needs through public names only: no private
    attribute of its ``OrderAPI`` nor of another module of the package."""
    tree = ast.parse((ROOT / 'worker' / 'api' / 'schedules.py').read_text())
    private = sorted({node.attr for node in ast.walk(tree)
                      if isinstance(node, ast.Attribute) and
                      node.attr.startswith('_') and
                      not node.attr.startswith('__') and
                      not (isinstance(node.value, ast.Name) and
                           node.value.id == 'self')})
    assert private == []


def test_the_bounds_have_one_definition_each():
    assert api.MAX_URL_LENGTH is targets.MAX_URL_LENGTH
    assert api.MAX_PROJECT_ID_LENGTH is inputs.MAX_PROJECT_ID_LENGTH
    assert api.MAX_ORDER_ID_LENGTH is inputs.MAX_ORDER_ID_LENGTH


@pytest.mark.parametrize('name', ['MAX_WAIT_SECONDS',
                                  'MAX_PROJECT_ID_LENGTH'])
def test_the_bounds_doc_api_cites_are_exported(name):
    assert name in api.__all__
    assert isinstance(getattr(api, name), int)
