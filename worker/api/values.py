"""The values of ``worker.api``: frozen dataclasses, never ORM rows or
sessions, so nothing of the database leaks to the caller; and how they
are made from rows (``order_of``, ``step_states``...).

The display helpers (``retry_rows_by_step``, ``in_declared_order``,
``step_status``) are shared with the operator commands, which show a
step as ``order show`` does.
"""

import dataclasses
import datetime
import typing

from worker.api import checks
from worker.db import models
from worker import order_types

PENDING = models.PENDING
ACTIVE = models.ACTIVE
ERROR = models.ERROR
CANCELLING = models.CANCELLING
CANCELLED = models.CANCELLED
ORDER_STATUSES = models.ORDER_STATUSES
#: The statuses ``wait`` returns at: an order in one never changes again,
#: but for an ERROR order that is resumed (``OrderAPI.resume``).
FINAL_STATUSES = models.TERMINAL_STATUSES

#: The project of the orders created before projects existed (and of the
#: operator commands' orders created without ``--project``).
DEFAULT_PROJECT = models.DEFAULT_PROJECT
#: An order's priority, higher sooner.
MIN_PRIORITY = models.MIN_PRIORITY
MAX_PRIORITY = models.MAX_PRIORITY


@dataclasses.dataclass(frozen=True)
class StepState:
    """One step of an order, as ``order show -f json`` shows it.

    ``status`` is ``WAITING``, ``QUEUED`` (cast, not taken up yet),
    ``RUNNING``, ``RETRYING`` (``next_retry_at`` says when), ``PARKED``
    (its retry row was set aside), ``DONE``, ``FAILED`` or ``CANCELLED``.
    The deliveries of the order's events are steps too
    (``notify:<url id>``, doc/notifications.md).
    """

    name: str
    #: The steps it runs after.
    after: tuple[str, ...]
    status: str
    #: Runs started.
    attempt: int
    #: The process (``pid@host``) running it, or None.
    owner: str | None
    started_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    next_retry_at: datetime.datetime | None
    last_error: str | None
    #: Times the process running it died (``[worker] max_step_crashes``).
    crashes: int = 0
    #: The resource key whose free slot the step waits for
    #: (doc/flow-control.md), or None.
    waiting_for: str | None = None


@dataclasses.dataclass(frozen=True)
class StepRun:
    """One run of a step of an order that ended, as ``order history -f
    json`` shows it (with ``generation`` besides). Times are naive UTC.
    """

    step: str
    #: The step's runs so far when this one was claimed, this one
    #: included: 1 for its first run.
    attempt: int
    #: The process that ran it (``pid@host``).
    worker: str | None
    #: When it was claimed, and when it ended (its result written, or
    #: its step taken back).
    started_at: datetime.datetime | None
    finished_at: datetime.datetime
    #: ``done``, ``retry``, ``failed``, ``taken back`` or ``superseded``
    #: (doc/operations.md says what each means).
    result: str
    #: Its error, at most 1,000 characters; None if it had none.
    error: str | None
    #: The token it held: each run of a step holds a greater one.
    generation: int
    #: On a row that records a cancel or a resume (step ``order:cancel``
    #: or ``order:resume``, result ``requested``): who asked, as
    #: ``Requester.as_dict`` gives it; None on a run of a step.
    requested_by: dict[str, str | None] | None = None


@dataclasses.dataclass(frozen=True)
class Requester:
    """Who asked for a cancel or a resume, as the order's history
    records it (``StepRun.requested_by``).

    Build it with ``of_context`` (a caller of the REST API or of the
    Python API, identified by its ``RequestContext``) or ``operator``
    (``barbican-retry-manage`` on the host).
    """

    #: ``user`` (a caller identified by its request context) or
    #: ``operator`` (the operator commands, on the host).
    actor: str
    user_id: str | None = None
    project_id: str | None = None
    request_id: str | None = None
    #: An operator's OS user and host (``name@host``); None for a user.
    os_user: str | None = None

    @classmethod
    def of_context(cls, context):
        """The caller of ``context`` (an oslo.context ``RequestContext``,
        as the REST API builds from the token)."""
        return cls(actor='user', user_id=context.user_id,
                   project_id=context.project_id,
                   request_id=context.request_id)

    @classmethod
    def operator(cls, os_user, request_id=None):
        """An operator on the host: ``os_user`` is ``name@host``."""
        return cls(actor='operator', os_user=os_user, request_id=request_id)

    def as_dict(self):
        """Its fields, as the history row's JSON holds them."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Order:
    """An order as its caller sees it. Times are naive UTC."""

    id: str
    type: str
    #: ``PENDING``, ``ACTIVE``, ``ERROR``, ``CANCELLING`` or ``CANCELLED``.
    status: str
    project_id: str
    #: Its metadata: what it was created with, and once ACTIVE what its
    #: steps added; empty in what ``list(with_meta=False)`` returns.
    meta: dict[str, typing.Any]
    priority: int
    idempotency_key: str | None
    #: The request ids of the request that created it (oslo.context).
    request_id: str | None
    global_request_id: str | None
    #: Why it is ERROR or CANCELLED.
    error_reason: str | None
    created_at: datetime.datetime
    updated_at: datetime.datetime
    #: Its steps in the order its type declares them; empty in what
    #: ``list`` returns.
    steps: tuple[StepState, ...] = ()
    #: When its first steps start, if it was created to start later
    #: (``create``'s ``not_before``); None if it started at once.
    not_before: datetime.datetime | None = None
    #: The schedule that created it (``worker.api.schedules``), if one
    #: did.
    schedule_id: str | None = None
    #: The pauses (``worker.api.pausing.Pause``) that hold its steps
    #: (``OrderAPI.pause``): of the order, its type, its type's topic, or
    #: a resource key a step waits for; empty while none does, and in
    #: what ``list`` returns.
    paused_by: tuple[typing.Any, ...] = ()
    #: The version of its type's graph it was created with, which it
    #: runs on (``worker.order_types.base.workflow_version``); None for
    #: an order created before versions were recorded.
    workflow_version: str | None = None


@dataclasses.dataclass(frozen=True)
class BulkResume:
    """What ``resume_many`` did."""

    #: The orders resumed, as they were right after (PENDING, or further
    #: on if their workers were quick), in the order they had failed.
    resumed: tuple[Order, ...]
    #: ``{order_id: why}`` of the orders it could not resume.
    failed: dict[str, str]


@dataclasses.dataclass(frozen=True)
class OrderTypeInfo:
    """An installed order type: its steps, compensation and meta schema.
    """

    name: str
    #: ``(step, (steps it comes after...))`` in declaration order.
    steps: tuple[tuple[str, tuple[str, ...]], ...]
    compensation: str | None
    #: The JSON Schema its orders' ``meta`` must satisfy, or None.
    meta_schema: dict[str, typing.Any] | None


def order_type_infos():
    """The installed order types (``OrderTypeInfo``), by name."""
    return [type_info(name, workflow)
            for name, workflow in order_types.installed().items()]


def order_type_info(name):
    """The ``OrderTypeInfo`` of the installed type ``name``.

    :raises UnknownOrderType: no such type is installed.
    """
    return type_info(name, checks.workflow(name))


def type_info(name, workflow):
    return OrderTypeInfo(
        name=name,
        steps=tuple((step.name, tuple(step.after))
                    for step in workflow.steps),
        compensation=(workflow.compensation.name if workflow.compensation
                      else None),
        meta_schema=workflow.meta_schema)


def retry_rows_by_step(tasks):
    """``{step: retry row}`` of one order's retry rows.

    A step has one row at a time, save for a moment (a row cast and not
    yet deleted); then the unparked row due first is the one that counts.
    """
    rows = {}
    for task in sorted(tasks, key=lambda task: (task.parked, task.retry_at,
                                                task.id), reverse=True):
        rows[task.retry_task] = task
    return rows


def order_workflow(order_type, version, steps):
    """The workflow an order of ``order_type`` created with ``version``
    (its steps' names ``steps``) runs on, for display: its type's current
    one if that does not declare it; None if the type is not installed.
    """
    try:
        workflow = order_types.get(order_type)
    except order_types.UnknownOrderType:
        return None
    try:
        return workflow.of_order(version, steps)
    except order_types.UnknownWorkflowVersion:
        return workflow


def in_declared_order(workflow, steps):
    """``[(name, step)]`` of ``steps`` (``{name: step}``) in the order the
    workflow declares them, the compensation last, unknown names after."""
    declared = list(workflow.names) if workflow else []
    if workflow and workflow.compensation:
        declared.append(workflow.compensation.name)
    names = [name for name in declared if name in steps]
    names += sorted(set(steps) - set(names))
    return [(name, steps[name]) for name in names]


def step_status(step, retry_row):
    """What one step is doing, for people: ``WAITING``, ``QUEUED``
    (cast, not taken up), ``RUNNING``, ``RETRYING`` (a retry row waits),
    ``PARKED``, or its final status."""
    if step.status != models.STEP_PENDING:
        return step.status
    if step.owner:
        return 'RUNNING'
    if retry_row is not None:
        return 'PARKED' if retry_row.parked else 'RETRYING'
    return 'QUEUED'


def order_of(row, steps, with_meta=True):
    return Order(
        id=row.id, type=row.type, status=row.status,
        project_id=row.project_id,
        meta=dict(row.meta or {}) if with_meta else {},
        priority=row.priority, idempotency_key=row.idempotency_key,
        request_id=row.request_id, global_request_id=row.global_request_id,
        error_reason=row.error_reason, created_at=row.created_at,
        updated_at=row.updated_at, steps=tuple(steps),
        not_before=row.not_before, schedule_id=row.schedule_id,
        workflow_version=row.workflow_version)


def step_run_of(row):
    return StepRun(step=row.step, attempt=row.attempt, worker=row.worker,
                   started_at=row.started_at, finished_at=row.finished_at,
                   result=row.result, error=row.error,
                   generation=row.generation, requested_by=row.requested_by)


def new_steps(workflow, deliveries, not_before):
    """The ``StepState`` of each step of an order just created: its first
    steps and its deliveries QUEUED (its first steps RETRYING until
    ``not_before`` if it starts later), the others WAITING."""
    later = set(workflow.roots()) if not_before is not None else set()
    queued = (set(workflow.roots()) - later) | set(deliveries)

    def state(name, after):
        status = ('QUEUED' if name in queued else
                  'RETRYING' if name in later else models.STEP_WAITING)
        return StepState(name=name, after=after, status=status, attempt=0,
                         owner=None, started_at=None, finished_at=None,
                         next_retry_at=not_before if name in later else None,
                         last_error=None)

    return [state(name, after)
            for name, after in [(step.name, tuple(step.after))
                                for step in workflow.steps] +
            [(name, ()) for name in sorted(deliveries)]]


def step_states(order_type, rows, retries, version=None):
    """The ``StepState`` of each step of an order, in the order its graph
    (of ``version``) declares them."""
    workflow = order_workflow(order_type, version, rows)
    by_step = retry_rows_by_step(retries)
    after = {}
    if workflow is not None:
        after = {step.name: tuple(step.after) for step in workflow.steps}
    states = []
    for name, row in in_declared_order(workflow, rows):
        retry = by_step.get(name)
        states.append(StepState(
            name=name, after=after.get(name, ()),
            status=step_status(row, retry),
            attempt=row.attempt, owner=row.owner,
            started_at=row.started_at, finished_at=row.finished_at,
            next_retry_at=(retry.retry_at if retry and not retry.parked
                           else None),
            last_error=row.last_error, crashes=row.crashes,
            waiting_for=retry.waiting_for if retry else None))
    return states
