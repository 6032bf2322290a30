"""The versions of an order type's graph (``worker.order_types.versions``)
and the graphs a type keeps (``previous_workflows``), as ``base.check``
reads them."""

import pytest

from worker.order_types import base
from worker import policy

FIRST = base.Step('first')
SECOND = base.Step('second', after=('first',))
THIRD = base.Step('third', after=('first',))


class _Steps(base.OrderType):
    """Methods for every step the tests declare."""

    def first(self, order):
        return None

    second = third = revoke = first


def _type(steps, previous=(), compensation=None):
    return type('Declared', (_Steps,), {
        'steps': steps, 'previous_workflows': previous,
        'compensation': compensation})


def test_a_version_is_the_graph_not_its_policies():
    version = base.workflow_version((FIRST, SECOND), None)
    assert len(version) == 16 and int(version, 16) >= 0
    slow = base.Step('second', after=('first',),
                     policy=policy.StepPolicy(max_attempts=9))
    assert base.workflow_version((FIRST, slow), None) == version
    assert base.workflow_version((FIRST, SECOND, THIRD), None) != version
    assert base.workflow_version((FIRST, base.Step('second')), None) != \
        version
    assert base.workflow_version((SECOND, FIRST), None) != version
    assert base.workflow_version((FIRST, SECOND), base.Step('revoke')) != \
        version


def test_a_type_keeps_its_previous_graphs_for_their_orders():
    workflow = base.check('grown', _type(
        (FIRST, SECOND, THIRD), (base.PreviousWorkflow((FIRST, SECOND)),)))
    old = base.workflow_version((FIRST, SECOND), None)
    assert workflow.version == base.workflow_version(
        (FIRST, SECOND, THIRD), None)
    assert workflow.versions == (workflow.version, old)
    assert workflow.of_version(workflow.version) is workflow
    kept = workflow.of_version(old)
    assert kept.names == ('first', 'second')
    assert (kept.type_name, kept.type_class) == ('grown',
                                                 workflow.type_class)
    with pytest.raises(base.UnknownWorkflowVersion,
                       match='order type grown does not declare workflow '
                             'version 0123 '):
        workflow.of_version('0123')


def test_an_order_without_a_version_runs_on_the_graph_of_its_rows():
    revoke = base.Step('revoke')
    workflow = base.check('grown', _type(
        (FIRST, SECOND, THIRD), (base.PreviousWorkflow((FIRST, SECOND)),),
        compensation=revoke))
    assert workflow.of_order(None, ['first', 'second', 'third']) is workflow
    # Deliveries and the compensation are not the graph's.
    assert workflow.of_order(
        None, ['first', 'second', 'notify:3', 'revoke']).names == (
        'first', 'second')
    with pytest.raises(base.UnknownWorkflowVersion,
                       match='declares no graph of steps first$'):
        workflow.of_order(None, ['first'])
    # A version wins over the rows.
    assert workflow.of_order(workflow.version, ['first']) is workflow


def test_a_previous_graph_keeps_the_compensation_unless_it_says_otherwise():
    revoke = base.Step('revoke')
    workflow = base.check('kept', _type(
        (FIRST, SECOND, THIRD),
        (base.PreviousWorkflow((FIRST, SECOND)),
         base.PreviousWorkflow((FIRST,), compensation=None)),
        compensation=revoke))
    same, without = workflow.previous
    assert same.compensation == revoke
    assert same.version == base.workflow_version((FIRST, SECOND), revoke)
    assert without.compensation is None


@pytest.mark.parametrize('previous, problem', [
    ((base.PreviousWorkflow((FIRST, SECOND, THIRD)),),
     r'previous_workflows\[0\]: the same graph as the current one'),
    ((base.PreviousWorkflow((FIRST,)), base.PreviousWorkflow((FIRST,))),
     r'previous_workflows\[1\]: the same graph as another previous one'),
    ((base.PreviousWorkflow((FIRST, base.Step('gone'))),),
     r'previous_workflows\[0\]: step gone has no method Declared.gone'),
    ((base.PreviousWorkflow((base.Step('second', after=('nowhere',)),)),),
     r'previous_workflows\[0\]: step second comes after unknown step'),
    ((base.PreviousWorkflow(()),),
     r'previous_workflows\[0\]: declares no steps'),
    (base.PreviousWorkflow((FIRST,)),
     'previous_workflows must be a tuple of PreviousWorkflow'),
])
def test_a_previous_graph_is_checked_as_the_current_one(previous, problem):
    with pytest.raises(base.InvalidOrderType, match=problem):
        base.check('changed', _type((FIRST, SECOND, THIRD), previous))
