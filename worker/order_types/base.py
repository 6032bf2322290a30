"""How an order type declares its workflow, and the checks it must pass.

An order type is a class registered in the ``barbican_retry.order_types``
namespace. It declares its steps as data (``steps``): each step names the
steps it comes after and carries its retry policy; a method of the same
name runs it. Example::

    class Renewal(base.OrderType):
        steps = (
            base.Step('check_key'),
            base.Step('check_domain'),
            base.Step('issue', after=('check_key', 'check_domain'),
                      policy=policy.StepPolicy(max_attempts=5),
                      resources=lambda order: ('ca:' + order.meta['ca'],)),
        )
        compensation = base.Step('revoke')

        def check_key(self, order): ...
        def check_domain(self, order): ...
        def issue(self, order): ...
        def revoke(self, order): ...

Each method takes an ``OrderView`` and returns a result
(``worker.plugins.base``). Like certificate plugins, order types are pure:
they never touch the database, RPC or global configuration.
"""

import dataclasses
import functools
import re
import typing

from worker.order_types import meta as meta_module
from worker.order_types import versions
from worker.plugins import base as results
from worker import policy as policy_module

# A step name is a retry row's ``retry_task`` and part of an option
# group's name.
_NAME = re.compile(r'^[a-z][a-z0-9_]{0,63}$')
# A signal name (``order_signals.name``): dotted, ``certificate.issued``.
SIGNAL_NAME = re.compile(r'^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$')
MAX_SIGNAL_NAME_LENGTH = 64
# A type name is ``orders.type`` (32 characters) and part of option groups.
_TYPE_NAME = re.compile(r'^[a-z][a-z0-9_]{0,31}$')


class InvalidOrderType(Exception):
    """An order type whose declaration cannot run; the message says why."""


# Declared in ``versions``, named here for the types that declare them.
PreviousWorkflow = versions.PreviousWorkflow
SAME_COMPENSATION = versions.SAME_COMPENSATION
UnknownWorkflowVersion = versions.UnknownWorkflowVersion
workflow_version = versions.workflow_version


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of a workflow as an order type declares it.

    :param after: the steps that must be DONE before this one runs.
    :param policy: how the step is retried and timed out; operators may
        override it (``[step:TYPE.STEP]``).
    :param resources: the resource keys a run of the step uses, or None:
        called with the order (its ``id``, ``type`` and ``meta``, the
        order's metadata with the outputs of its DONE steps merged in, as
        its ``OrderView``'s), it returns an iterable of keys such as
        ``ca:letsencrypt``. The step is claimed only when it can take a
        slot of each (``[resource:PREFIX] capacity``) and, for a key with
        a ``rate``, a start (``worker.steps.flow``). A callable that
        raises or returns a key that is not a string of 1 to 255
        characters fails the step, as its policy decides on a give-up.
    :param signals: the names of the signals the step waits for
        (``OrderAPI.signal``): a run sees those sent to its order and not
        consumed yet (``OrderView.signals``), the run that completes the
        step consumes them, and one that arrives while the step waits
        (``WaitForSignal``, or any ``RetryLater``) runs it at once.
    """

    name: str
    after: tuple[str, ...] = ()
    policy: policy_module.StepPolicy = policy_module.StepPolicy()
    resources: typing.Callable[[typing.Any], typing.Iterable[str]] | \
        None = None
    signals: tuple[str, ...] = ()


class OrderType:
    """Base class of order types: declare ``steps``, write one method each.

    :cvar steps: the workflow, a tuple of ``Step``.
    :cvar compensation: a ``Step`` run once when an order of this type is
        cancelled (its ``after`` is ignored), or None.
    :cvar deadline_seconds: an order still PENDING this long after it was
        created goes to ERROR at its next step; 0 for no deadline.
    :cvar max_running: how many steps of orders of this type may run at
        once, across every worker and host (``[order_type:T]
        max_running`` overrides it); 0 for no bound.
    :cvar step_events: besides its status changes, an order of this type
        notifies its subscribers of each step that ends (``step.done``,
        ``step.failed``; ``worker.notifications``).
    :cvar option_group: the type's own option group, if it has options.
    :cvar options: the ``oslo_config.cfg.Opt`` of that group; they are
        registered with the type (and in the sample configuration), and
        the type receives their values as keyword arguments.
    :cvar meta_schema: a JSON Schema (draft 2020-12, as a dict) that the
        metadata of a new order of this type must satisfy
        (``meta.validate_meta``), or None to accept any JSON object. It
        is checked at load: a schema that is not valid refuses the type.
    :cvar previous_workflows: the graphs (``PreviousWorkflow``) the type
        declared before, whose orders may still be open: each order runs
        on the graph it was created with (``Order.workflow_version``), and
        a worker leaves the orders of a graph it does not know to one
        that does.
    """

    steps: typing.ClassVar[tuple[Step, ...]] = ()
    compensation: typing.ClassVar[Step | None] = None
    deadline_seconds: typing.ClassVar[float] = 0.0
    max_running: typing.ClassVar[int] = 0
    step_events: typing.ClassVar[bool] = False
    option_group: typing.ClassVar[str | None] = None
    options: typing.ClassVar[tuple[typing.Any, ...]] = ()
    meta_schema: typing.ClassVar[dict[str, typing.Any] | None] = None
    previous_workflows: typing.ClassVar[
        tuple[versions.PreviousWorkflow, ...]] = ()

    @classmethod
    def build(cls, conf: typing.Any) -> 'OrderType':
        """An instance with the current values of its own options.

        The default passes its ``options`` as keyword arguments; a type
        that wraps a plugin overrides this.
        """
        if not cls.option_group:
            return cls()
        group = conf[cls.option_group]
        return cls(**{opt.dest: group[opt.dest] for opt in cls.options})

    def run(self, step: str, order: results.OrderView) -> results.Result:
        """Run ``step`` of ``order``: call the method of that name."""
        method: typing.Callable[[results.OrderView], results.Result] = \
            getattr(self, step)
        return method(order)


@dataclasses.dataclass(frozen=True)
class Workflow:
    """An order type's declaration, checked and indexed.

    Built by ``check``; the worker, the retry scheduler's commands and the
    operator commands all read the steps from here.
    """

    type_name: str
    type_class: type[OrderType]
    steps: tuple[Step, ...]
    compensation: Step | None
    deadline_seconds: float
    step_events: bool = False
    max_running: int = 0
    # Out of the hash, which a dict cannot have; still compared.
    meta_schema: dict[str, typing.Any] | None = dataclasses.field(
        default=None, hash=False)
    #: ``workflow_version`` of its steps: what a new order records.
    version: str = ''
    #: The graphs the type declared before, as workflows of their own
    #: (their ``previous`` empty, the rest as the current one's), in the
    #: order of ``previous_workflows``.
    previous: tuple['Workflow', ...] = ()

    def __hash__(self) -> int:
        # By name: a type's name is unique in a process. The workers key
        # their caches of policies and resource keys by workflow at every
        # claim, and the generated hash would hash every field of every
        # step each time. Equal workflows have equal names.
        return hash(self.type_name)

    @property
    def versions(self) -> tuple[str, ...]:
        """Every version the type declares: its own, then its previous
        graphs'."""
        return (self.version,) + tuple(old.version for old in self.previous)

    def of_version(self, version: str) -> 'Workflow':
        """The workflow an order created with ``version`` runs on.

        :raises UnknownWorkflowVersion: the type does not declare it.
        """
        return versions.of_version(self, version)

    def of_order(self, version: str | None,
                 step_names: typing.Iterable[str]) -> 'Workflow':
        """The workflow of an order created with ``version`` whose steps
        have rows named ``step_names``.

        An order created before versions were recorded has none (NULL):
        it runs on the graph declared when the release that records them
        was installed, found as the declared graph (the current one
        first) whose steps are exactly its rows (deliveries and the
        compensation left out).

        :raises UnknownWorkflowVersion: no declared graph is the order's.
        """
        return versions.of_order(self, version, step_names)

    @property
    def names(self) -> tuple[str, ...]:
        """The workflow's step names, in declaration order."""
        return tuple(step.name for step in self.steps)

    def step(self, name: str) -> Step:
        """The declaration of step ``name`` (or of the compensation).

        :raises KeyError: no such step.
        """
        for step in self.steps:
            if step.name == name:
                return step
        if self.compensation and self.compensation.name == name:
            return self.compensation
        raise KeyError(name)

    def has_step(self, name: str) -> bool:
        """True if ``name`` is a step of this type or its compensation."""
        try:
            self.step(name)
        except KeyError:
            return False
        return True

    def waiting_for(self, signal: str) -> tuple[str, ...]:
        """The steps that declare ``signal`` (``Step.signals``)."""
        return tuple(step.name for step in self.steps
                     if signal in step.signals)

    @property
    def signals(self) -> tuple[str, ...]:
        """Every signal a step of the workflow waits for, once each."""
        return tuple(dict.fromkeys(
            name for step in self.steps for name in step.signals))

    def roots(self) -> tuple[str, ...]:
        """The steps that come after none: they run first."""
        return tuple(step.name for step in self.steps if not step.after)

    def before(self, name: str) -> set[str]:
        """Every step that ``name`` comes after, directly or not."""
        found: set[str] = set()
        pending = list(self.step(name).after)
        while pending:
            before = pending.pop()
            if before not in found:
                found.add(before)
                pending.extend(self.step(before).after)
        return found

    @functools.cached_property
    def _in_sequence(self) -> frozenset[str]:
        before = {name: self.before(name) for name in self.names}
        return frozenset(
            name for name in self.names
            if all(other == name or other in before[name] or
                   name in before[other] for other in self.names))

    def in_sequence(self, name: str) -> bool:
        """True if no other step can run while ``name`` runs.

        So when every other step comes before it or after it: a chain
        such as the certificate type's. Such a step's result needs no
        lock on its order and no look at the others.
        """
        return name in self._in_sequence

    def ready(self, done: typing.AbstractSet[str],
              started: typing.AbstractSet[str]) -> tuple[str, ...]:
        """Steps not ``started`` whose predecessors are all in ``done``."""
        return tuple(step.name for step in self.steps
                     if step.name not in started and
                     set(step.after) <= done)


def check(type_name: str, type_class: type[OrderType]) -> Workflow:
    """Check an order type's declaration; return its ``Workflow``.

    :raises InvalidOrderType: no steps, a bad or repeated name, an unknown
        predecessor, a cycle, a step with no method to run it, or a
        ``meta_schema`` that is not a valid JSON Schema; or a previous
        graph (``previous_workflows``) with one of these, or the same as
        the current one or another.
    """
    def refuse(problem: str) -> typing.NoReturn:
        raise InvalidOrderType('order type %s: %s' % (type_name, problem))

    if not _TYPE_NAME.match(type_name):
        refuse('a type name must be lower case letters, digits and _, '
               'starting with a letter, at most 32 long')
    steps = tuple(type_class.steps)
    if not steps:
        refuse('declares no steps')
    _check_graph(type_class, steps, type_class.compensation, refuse)
    problem = meta_module.schema_problem(type_class.meta_schema)
    if problem:
        refuse(problem)
    max_running = type_class.max_running
    if not isinstance(max_running, int) or max_running < 0:
        refuse('max_running must be an integer, 0 or more, not %r'
               % (max_running,))
    current = Workflow(
        type_name=type_name, type_class=type_class, steps=steps,
        compensation=type_class.compensation,
        deadline_seconds=float(type_class.deadline_seconds),
        step_events=bool(type_class.step_events), max_running=max_running,
        meta_schema=type_class.meta_schema,
        version=workflow_version(steps, type_class.compensation))
    return dataclasses.replace(current, previous=versions.previous(
        current, functools.partial(_check_graph, type_class), refuse))


def _check_graph(type_class: type[OrderType], steps: tuple[Step, ...],
                 compensation: Step | None,
                 refuse: typing.Callable[[str], typing.Any]) -> None:
    """Check one graph of ``type_class``: its steps' names and methods,
    their predecessors, no cycle; ``refuse`` raises with a problem."""
    declared = list(steps) + ([compensation] if compensation else [])
    seen: set[str] = set()
    for step in declared:
        problem = _step_problem(type_class, step, seen)
        if problem:
            refuse(problem)
        seen.add(step.name)
    names = {step.name for step in steps}
    for step in steps:
        unknown = sorted(set(step.after) - names)
        if unknown:
            refuse('step %s comes after unknown step(s) %s'
                   % (step.name, ', '.join(unknown)))
    cycle = _find_cycle({step.name: step.after for step in steps})
    if cycle:
        refuse('its steps form a cycle: %s' % ' -> '.join(cycle))


def _step_problem(type_class: type[OrderType], step: object,
                  seen: set[str]) -> str | None:
    """What is wrong with one declared step, or None.

    :param seen: the names of the steps declared before it.
    """
    if not isinstance(step, Step):
        return '%r is not a Step' % (step,)
    if not _NAME.match(step.name):
        return ('step name %r must be lower case letters, digits and _, '
                'starting with a letter, at most 64 long' % step.name)
    if isinstance(step.after, str) or not all(
            isinstance(before, str) for before in step.after):
        return ('step %s: after must be a tuple of step names, not %r'
                % (step.name, step.after))
    if step.resources is not None and not callable(step.resources):
        return ('step %s: resources must be a callable of the order, not '
                '%r' % (step.name, step.resources))
    if isinstance(step.signals, str) or not all(
            isinstance(name, str) and SIGNAL_NAME.match(name) and
            len(name) <= MAX_SIGNAL_NAME_LENGTH for name in step.signals):
        return ('step %s: signals must be a tuple of names of lower case '
                'letters, digits, _ and dots (at most %d long), not %r'
                % (step.name, MAX_SIGNAL_NAME_LENGTH, step.signals))
    if step.name in seen:
        return 'step %s is declared twice' % step.name
    if not callable(getattr(type_class, step.name, None)):
        return ('step %s has no method %s.%s to run it'
                % (step.name, type_class.__name__, step.name))
    return None


def _find_cycle(after: dict[str, tuple[str, ...]]) -> list[str]:
    """A cycle of the "comes after" graph, as a path, or []."""
    visiting: list[str] = []
    finished: set[str] = set()

    def visit(name: str) -> list[str]:
        if name in finished:
            return []
        if name in visiting:
            return visiting[visiting.index(name):] + [name]
        visiting.append(name)
        for before in after[name]:
            cycle = visit(before)
            if cycle:
                return cycle
        visiting.pop()
        finished.add(name)
        return []

    for name in after:
        cycle = visit(name)
        if cycle:
            return cycle
    return []
