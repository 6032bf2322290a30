"""The kinds of step: a step of an order type's workflow, or a delivery
of the order's notifications.

A step's kind is decided once, at its claim (``Kinds.of``), and travels
with its run (``runs.Run.kind``). Each kind brings its policy, its run
(with its precheck) and the decision of its result:

- ``worker.steps.workflow.WorkflowStepKind``;
- ``worker.steps.delivery.DeliveryKind``.

``worker.db.models.is_delivery`` is the one predicate that tells them
apart by the step's name (``notify:<url id>``).
"""

import datetime
import typing

from worker.db import models
from worker.db import repositories
from worker.steps import delivery
from worker.steps import flow
from worker.steps import pauses
from worker.steps import runs
from worker.steps import workflow


class Kinds:
    """The kinds of step of one worker, built with what they need.

    :param clock: returns the current UTC time (naive).
    :param sender: posts one event (``worker.notifications.sender``).
    :param observe_delivery: called with the events a delivery run sent
        and whether a request failed.
    """

    def __init__(self, conf: typing.Any, database: repositories.Database,
                 clock: typing.Callable[[], datetime.datetime],
                 sender: typing.Any,
                 observe_delivery: typing.Callable[[int, bool], None]
                 ) -> None:
        self.workflow_step = workflow.WorkflowStepKind(conf, clock)
        self.delivery = delivery.DeliveryKind(
            conf, database, sender, clock, observe_delivery)
        #: The resource keys of workflow steps (a delivery needs none).
        self.limits = flow.Limits(conf)
        #: The pauses that may hold workflow steps (a delivery runs).
        self.holds = pauses.Holds(conf, database.repositories)

    def of(self, step: str) -> runs.StepKind:
        """The kind of ``step``."""
        return (self.delivery if models.is_delivery(step) else
                self.workflow_step)
