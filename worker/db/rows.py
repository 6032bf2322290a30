"""The rows that repositories return, as protocols of their columns.

The SQL repositories return ORM objects (``worker.db.models``) or, for a
claim's read, named tuples of the columns; the in-memory fake returns
records with the same attributes (``worker.db.memory.base``). Code that
reads rows through ``database.repositories`` is typed against these
protocols, which each of them satisfies. The attributes are those of the
models' columns, with their types.

A row that callers of every side hand a repository to insert, and that
it returns, is a named tuple here (``StepRun``).
"""

import dataclasses
import datetime
import typing

#: A JSON column's value.
JSON = dict[str, typing.Any]


class Order(typing.Protocol):
    """A row of ``orders`` (``models.Order``)."""

    id: str
    type: str
    status: str
    meta: JSON
    error_reason: str | None
    priority: int
    project_id: str
    idempotency_key: str | None
    request_hash: str | None
    request_id: str | None
    global_request_id: str | None
    not_before: datetime.datetime | None
    schedule_id: str | None
    trace_context: JSON | None
    created_at: datetime.datetime
    updated_at: datetime.datetime
    workflow_version: str | None


class ProjectQuota(typing.Protocol):
    """A row of ``project_quotas`` (``models.ProjectQuota``)."""

    project_id: str
    pending_orders: int | None
    created_at: datetime.datetime
    updated_at: datetime.datetime
    held_at: datetime.datetime


class OrderSignal(typing.Protocol):
    """A row of ``order_signals`` (``models.OrderSignal``)."""

    id: int
    order_id: str
    signal_id: str
    name: str
    payload: typing.Any
    created_at: datetime.datetime
    consumed_at: datetime.datetime | None
    consumed_by: str | None


class Schedule(typing.Protocol):
    """A row of ``schedules`` (``models.Schedule``)."""

    id: str
    project_id: str
    type: str
    meta: JSON
    priority: int
    every_seconds: int | None
    cron: str | None
    next_tick_at: datetime.datetime
    last_tick_at: datetime.datetime | None
    last_order_id: str | None
    created_at: datetime.datetime
    updated_at: datetime.datetime
    timezone: str
    overlap: str
    buffered_tick_at: datetime.datetime | None


class Step(typing.Protocol):
    """A row of ``order_steps`` (``models.OrderStep``)."""

    order_id: str
    name: str
    status: str
    generation: int
    attempt: int
    failures: int
    polls: int
    crashes: int
    owner: str | None
    claimed_at: datetime.datetime | None
    lease_expires_at: datetime.datetime | None
    dispatched_at: datetime.datetime | None
    started_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    last_error: str | None
    output: JSON | None
    updated_at: datetime.datetime


class RetryTask(typing.Protocol):
    """A row of ``order_retry_tasks`` (``models.OrderRetryTask``)."""

    id: int
    order_id: str
    retry_task: str
    retry_at: datetime.datetime
    retry_args: str
    retry_kwargs: str
    retry_count: int
    priority: int
    parked: bool
    park_reason: str | None
    waiting_for: str | None
    created_at: datetime.datetime


class StepRun(typing.NamedTuple):
    """A row of ``order_step_runs`` (``models.OrderStepRun``): a run of a
    step that ended. ``history.add_many`` takes them without their ``id``
    (None), ``history.for_order`` returns them with it."""

    order_id: str
    step: str
    #: The token the run held.
    generation: int
    #: Its step's ``attempt`` after its claim.
    attempt: int
    #: The process that claimed it (``pid@host``).
    worker: str | None
    #: When it was claimed.
    started_at: datetime.datetime | None
    finished_at: datetime.datetime
    #: One of ``models.RUN_RESULTS``.
    result: str
    error: str | None = None
    #: Who asked, on a row of a cancel or a resume; else None.
    requested_by: dict[str, str | None] | None = None
    id: int | None = None


class Lock(typing.Protocol):
    """A row of ``entity_locks`` (``models.EntityLock``)."""

    entity_to_lock: str
    worker_host_name: str
    owner_token: str
    created_at: datetime.datetime


class Service(typing.Protocol):
    """A row of ``services`` (``models.Service``)."""

    name: str
    kind: str
    host: str
    pid: int
    started_at: datetime.datetime
    heartbeat_at: datetime.datetime
    last_pass_at: datetime.datetime | None
    next_pass_at: datetime.datetime | None
    clock_offset: float | None
    topic: str | None


class Url(typing.Protocol):
    """A row of ``notification_urls`` (``models.NotificationUrl``)."""

    id: int
    url: str
    url_hash: str
    available: bool
    failures: int
    last_error: str | None
    last_failure_at: datetime.datetime | None
    disabled_at: datetime.datetime | None
    secret: str | None
    previous_secret: str | None
    previous_secret_until: datetime.datetime | None
    project_id: str | None
    created_at: datetime.datetime
    updated_at: datetime.datetime


class Event(typing.Protocol):
    """A row of ``notification_events`` (``models.NotificationEvent``)."""

    id: int
    event_id: str
    order_id: str
    sequence: int
    event: str
    status: str
    step: str | None
    detail: JSON | None
    created_at: datetime.datetime


@dataclasses.dataclass(frozen=True)
class PurgeCounts:
    """Rows a purge deleted (or a dry run would delete), per table
    (``worker.db.purge``)."""

    orders: int = 0
    order_steps: int = 0
    order_retry_tasks: int = 0
    notification_events: int = 0
    order_step_runs: int = 0
    order_signals: int = 0

    def __add__(self, other: 'PurgeCounts') -> 'PurgeCounts':
        return PurgeCounts(*(mine + theirs for mine, theirs in zip(
            dataclasses.astuple(self), dataclasses.astuple(other))))

    @property
    def rows(self) -> int:
        """Rows of every table together."""
        return sum(dataclasses.astuple(self))


class ConsoleSession(typing.Protocol):
    """A row of ``console_sessions`` (``models.ConsoleSession``)."""

    id: str
    token: str
    csrf_token: str
    user_id: str
    user_name: str
    project_id: str
    project_name: str
    roles: str
    created_at: datetime.datetime
    expires_at: datetime.datetime
