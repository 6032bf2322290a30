"""The versions of an order type's graph, and the graphs it keeps.

An order records the version of its type's graph at creation
(``Order.workflow_version``); the type keeps the graphs of its open orders
declared (``OrderType.previous_workflows``), and a worker applies to an
order the graph it was created with, never another
(``worker.order_types.base.Workflow.of_order``).
"""

import dataclasses
import hashlib
import json
import typing

if typing.TYPE_CHECKING:
    from worker.order_types import base


class UnknownWorkflowVersion(LookupError):
    """An order's workflow version that its installed type does not
    declare: the order was created with a graph this process does not
    know (a newer release's, or one its type no longer keeps)."""


#: ``PreviousWorkflow.compensation``'s default: the type's current one.
SAME_COMPENSATION: typing.Any = object()


@dataclasses.dataclass(frozen=True)
class PreviousWorkflow:
    """A graph an order type declared before, kept so that the orders
    created with it finish on it (``OrderType.previous_workflows``).

    Its steps are checked as the current ones are, and each needs a
    method of the type to run it: keep the method of a removed or renamed
    step while orders of the old graph may still run it.

    :param steps: the graph's steps, as they were declared.
    :param compensation: its compensation step as declared then; by
        default, the type's current one.
    """

    steps: tuple['base.Step', ...]
    compensation: 'base.Step | None' = SAME_COMPENSATION


def workflow_version(steps: typing.Iterable['base.Step'],
                     compensation: 'base.Step | None') -> str:
    """The version of a graph: a stable hash of its steps' names, in
    declaration order, what each comes after, and its compensation's
    name.

    It reads the declaration only, never the code, nor policies or
    resources (which apply to the orders of every version): two
    processes that declare the same graph agree on its version.
    """
    graph = {'steps': [[step.name, sorted(step.after)] for step in steps],
             'compensation': compensation.name if compensation else None}
    text = json.dumps(graph, sort_keys=True, separators=(',', ':'))
    return hashlib.sha256(text.encode('utf-8')).hexdigest()[:16]


def of_version(workflow: 'base.Workflow', version: str) -> 'base.Workflow':
    """``Workflow.of_version``: the graph of ``version`` among
    ``workflow``'s."""
    for found in (workflow,) + workflow.previous:
        if found.version == version:
            return found
    raise UnknownWorkflowVersion(
        'order type %s does not declare workflow version %s (it declares '
        '%s)' % (workflow.type_name, version, ', '.join(workflow.versions)))


def of_order(workflow: 'base.Workflow', version: str | None,
             step_names: typing.Iterable[str]) -> 'base.Workflow':
    """``Workflow.of_order``: by ``version``, or for an order without one
    the declared graph (the current one first) whose steps are exactly
    its rows, deliveries and the compensation left out."""
    if version is not None:
        return of_version(workflow, version)
    # A step name has no ':' (``base._NAME``); a delivery's has.
    names = {name for name in step_names if ':' not in name}
    for found in (workflow,) + workflow.previous:
        compensation = ({found.compensation.name} if found.compensation
                        else set())
        if names - compensation == set(found.names):
            return found
    raise UnknownWorkflowVersion(
        'order type %s declares no graph of steps %s'
        % (workflow.type_name, ', '.join(sorted(names)) or 'none'))


def previous(current: 'base.Workflow',
             check_graph: typing.Callable[..., None],
             refuse: typing.Callable[[str], typing.Any]
             ) -> tuple['base.Workflow', ...]:
    """The workflows of ``current``'s type's ``previous_workflows``,
    each checked by ``check_graph(steps, compensation, refuse)``;
    ``refuse`` raises with a problem."""
    previous = current.type_class.previous_workflows
    if isinstance(previous, PreviousWorkflow) or not all(
            isinstance(old, PreviousWorkflow) for old in previous):
        refuse('previous_workflows must be a tuple of PreviousWorkflow, '
               'not %r' % (previous,))
    found: list['base.Workflow'] = []
    seen = {current.version}
    for number, old in enumerate(previous, 1):
        def refuse_old(problem: str, number: int = number) -> None:
            refuse('previous_workflows[%d]: %s' % (number - 1, problem))

        steps = tuple(old.steps)
        compensation = (current.compensation
                        if old.compensation is SAME_COMPENSATION
                        else old.compensation)
        if not steps:
            refuse_old('declares no steps')
        check_graph(steps, compensation, refuse_old)
        version = workflow_version(steps, compensation)
        if version in seen:
            refuse_old('the same graph as %s, version %s'
                       % ('the current one' if version == current.version
                          else 'another previous one', version))
        seen.add(version)
        found.append(dataclasses.replace(
            current, steps=steps, compensation=compensation,
            version=version))
    return tuple(found)
