"""The values of one run of a step: its facts, an error it raised, the
decision its result makes, and the kinds of outcome.

Glossary (``worker.db.models`` has the whole of it): ``step`` is a
step's name; ``generation`` is the step's fencing value at rest;
``token`` is the generation a claimed run holds (its claim moved the step
from ``token - 1`` to ``token``), and every write of its result is
conditional on it.
"""

import dataclasses
import datetime
import typing

from oslo_context import context as oslo_context

from worker import context as context_module
from worker.db import models
from worker.db import repositories as repositories_module
from worker.order_types import base as types_base
from worker import policy as policy_module
from worker import values

#: Outcome kinds of a workflow step, also the worker's metric labels.
DONE = 'done'
ACTIVE = 'active'
ERROR = 'error'
RETRY = 'retry'
CANCELLED = 'cancelled'
#: Outcome kinds of a delivery (besides ``retry``).
DELIVERED = 'delivered'
PAUSED = 'paused'
#: Not outcomes of a run but results the worker counts too: a message
#: dropped because its token is no longer current, and a result discarded
#: because its step moved on while it ran.
STALE = 'stale'
SUPERSEDED = 'superseded'
#: A step not claimed because a resource slot or start was not free: it
#: waits (``worker.steps.flow``).
WAITING = 'waiting'

#: Every label of the worker's step metric.
ALL = (DONE, ACTIVE, ERROR, RETRY, CANCELLED, STALE, SUPERSEDED, DELIVERED,
       PAUSED, WAITING)


@dataclasses.dataclass(frozen=True)
class StepError:
    """A run that raised: the exception, as the policy matches it."""

    description: str
    #: Qualified and short names of the exception's class and its bases.
    class_names: tuple[str, ...]

    @classmethod
    def of(cls, exc: BaseException) -> 'StepError':
        """The ``StepError`` of an exception."""
        names = []
        for klass in type(exc).__mro__:
            if klass is object:
                continue
            names.extend([klass.__name__,
                          '%s.%s' % (klass.__module__, klass.__qualname__)])
        return cls('%s: %s' % (type(exc).__name__, exc), tuple(names))


@dataclasses.dataclass(frozen=True)
class Run:
    """The facts of one claimed run that its result is written against."""

    order_id: str
    step: str
    #: The token the run holds.
    token: int
    #: The kind of step (``worker.steps.kinds``): how it runs and how its
    #: result is decided.
    kind: 'StepKind'
    #: The step's failures in a row and polls before this run.
    failures: int
    polls: int
    started_at: datetime.datetime | None
    last_error: str | None
    #: When the order was created, or when it started if it was created
    #: to start later (``not_before``): what its deadline counts from.
    order_created_at: datetime.datetime | None
    #: The order's metadata as read at the claim; it changes only when
    #: the order completes.
    order_meta: typing.Mapping[str, typing.Any] | None
    #: The order's priority, which the step's retry rows get.
    order_priority: int
    #: The order type's declaration; None for a delivery of an order whose
    #: type is not installed here.
    workflow: types_base.Workflow | None
    policy: policy_module.StepPolicy
    #: ``{step: OrderStep}`` of the order as read when the run was
    #: claimed.
    steps: typing.Mapping[str, typing.Any] = dataclasses.field(
        default_factory=dict)
    #: The order has deliveries (``worker.notifications``): its changes
    #: are events.
    subscribed: bool = False
    #: Each step that ends is an event too (``step_events``).
    step_events: bool = False
    #: When this run was claimed; its lease ends ``policy.timeout_seconds``
    #: later.
    claimed_at: datetime.datetime | None = None
    #: The step's ``attempt`` as this run's claim set it (its runs so
    #: far, this one included), and the process that claimed it
    #: (``pid@host``): the run's row in its order's history.
    attempt: int = 0
    worker: str | None = None
    #: The project that owns the order, which its events name.
    project_id: str = models.DEFAULT_PROJECT
    #: The request ids of the order, as read at the claim; None if it has
    #: none.
    request: values.RequestIds | None = None
    #: Times a process died while running the step, before this run.
    crashes: int = 0
    #: The resource keys whose slots the run holds (its token holds
    #: them), freed with its result (``worker.steps.flow``).
    resources: tuple[str, ...] = ()
    #: Why the step's resource keys could not be named: the run fails.
    resource_error: str | None = None
    #: The trace carrier (``worker.tracing``) of the run: its order's
    #: creation as the claim read it, then its step's span
    #: (``worker.steps.traces``); None with tracing off.
    trace: dict[str, str] | None = None
    #: How many runs of its order this worker continued locally in a row
    #: before this one (``worker.steps.continuation``): 0 for a run
    #: claimed from a message.
    continued: int = 0
    #: The ids of the signals its view holds (``OrderView.signals``),
    #: oldest first: the run that completes the step consumes them, and
    #: one sent after them wakes a step that polls.
    signals: tuple[int, ...] = ()

    @property
    def context(self) -> oslo_context.RequestContext | None:
        """The context of the run's log lines: its order's request ids;
        None if the order has no request id (``worker.context.for_ids``,
        which keeps one per order).
        """
        return context_module.for_ids(self.request)

    @property
    def compensating(self) -> bool:
        """True if the step is its order type's compensation step."""
        compensation = self.workflow.compensation if self.workflow else None
        return compensation is not None and self.step == compensation.name

    @property
    def lease_until(self) -> datetime.datetime:
        """When the run's lease ends."""
        assert self.claimed_at is not None  # nosec: set by every claim
        return self.claimed_at + datetime.timedelta(
            seconds=self.policy.timeout_seconds)


@dataclasses.dataclass(frozen=True)
class Decision:
    """What a result does: its writes, in order, and what it tells.

    :param kind: ``done``, ``active``, ``error``, ``retry`` or
        ``cancelled``; a delivery's ``delivered``, ``retry`` or
        ``paused``. The worker's metric label.
    :param description: one line for the log.
    :param writes: the ``worker.steps.writes`` values to execute.
    :param casts: steps made ready, to cast after the commit.
    """

    kind: str
    description: str
    writes: tuple[typing.Any, ...] = ()
    casts: tuple[values.StepRef, ...] = ()


#: What a run gives its kind's decision: an order type's or plugin's
#: result, a precheck's ``GiveUp``, a raised ``StepError``, or a
#: delivery's ``Sent``, ``Paused`` or ``KeyMissing``.
Outcome = typing.Any


class StepKind(typing.Protocol):
    """A kind of step (``worker.steps.kinds``): its policy, its run and
    the decision of its result."""

    #: Runs a step of its order type's workflow, and has an order view.
    runs_workflow: bool

    def policy(self, workflow: types_base.Workflow | None,
               step: str) -> policy_module.StepPolicy:
        """The policy of ``step`` of an order of ``workflow``."""

    def run(self, run: Run, view: typing.Any) -> Outcome:
        """Run the claimed step, outside any transaction, with what its
        claim read: a workflow step's ``OrderView`` (or None), a
        delivery's ``Pending``."""

    def unapplied(self, run: Run, error: str) -> Outcome:
        """The outcome written, in its own transaction, instead of a
        result of ``run`` that raised ``error`` as it was applied: one
        that fails the step visibly (``worker.steps.apply``)."""

    def decide(self, session: typing.Any,
               repositories: repositories_module.Repositories, run: Run,
               result: Outcome, now: datetime.datetime,
               facts: typing.Any = None) -> 'Decision | None':
        """The decision of ``result``, in the apply's transaction; None
        if the order moved on.

        :param facts: what the kind's ``prepare`` (if it has one) read
            for the results of the batch, once for all of them.
        """
