"""SQLAlchemy models: orders, their steps, retry tasks and entity locks.

One word per thing, in code, logs and docs:

- **step**: a step's name, unique within its order (``order_steps.name``;
  a retry row keeps it in ``retry_task``, the blueprint's column name). A
  delivery of notifications is a step too, named ``notify:<url id>``
  (``is_delivery``). The certificate plugin API's ``RetryLater.method``
  names a step as well (kept for plugins written against it).
- **generation**: a step's fencing value at rest (``order_steps.
  generation``), and the one a message or a retry row carries
  (``values.StepRef.generation``): a claim succeeds only from it.
- **token**: the generation a claimed run holds (the claim moved the step
  to it); every write of the run's result is conditional on it.
- **owner_token**: what the holder of an ``EntityLock`` (the retry
  daemon's pass lock) renews and releases it by.
- **owner**: the process (``pid@host``) that holds a step's claim.
- **order type** and **workflow**: the declaration of an order's steps
  (``worker.order_types``); **policy**: a step's retry policy.

Over 400 lines, and one module all the same: the declarative base's
tables, their indexes and constraints are one schema, which the
migrations and ``tests/functional/test_migrations.py`` compare as a
whole (``Base.metadata``); a module per table would split that one
metadata across imports that must all run before it is complete.
"""

import datetime
import hashlib
import typing

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy import orm

# NOTE: MySQL's DATETIME keeps whole seconds unless asked for more; retry
# ordering and lateness need sub-second precision on every backend.
Timestamp = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), 'mysql')

# NOTE: SQLite only auto-increments an INTEGER PRIMARY KEY.
BigId = sa.BigInteger().with_variant(sa.Integer(), 'sqlite')


def exact_collation(dialect):
    """The MySQL or MariaDB collation that compares text as its bytes,
    trailing spaces included (migration 0012).

    The servers' default, ``utf8mb4_unicode_ci``, finds the project
    ``TENB``'s orders for ``tenB``, and ``utf8mb4_bin`` still pads: it
    finds them for ``tenB ``. MariaDB's no-pad binary collation does not;
    MySQL 8's ``utf8mb4_0900_bin`` is its equivalent there.
    """
    if getattr(dialect, 'is_mariadb', False):
        return 'utf8mb4_nopad_bin'
    return 'utf8mb4_0900_bin'


class ExactString(sa.types.TypeDecorator):
    """A string compared exactly on every backend: a project id or an
    idempotency key, which tenancy and idempotency compare.

    SQLite and PostgreSQL compare strings exactly already; on MySQL and
    MariaDB the column has ``exact_collation``.
    """

    impl = sa.String
    cache_ok = True

    def load_dialect_impl(self, dialect):
        if dialect.name in ('mysql', 'mariadb'):
            return dialect.type_descriptor(mysql.VARCHAR(
                self.impl.length, collation=exact_collation(dialect)))
        return dialect.type_descriptor(sa.String(self.impl.length))


PENDING = 'PENDING'
ACTIVE = 'ACTIVE'
ERROR = 'ERROR'
#: Cancelled; its order type's compensation step has not finished yet.
CANCELLING = 'CANCELLING'
CANCELLED = 'CANCELLED'
ORDER_STATUSES = (PENDING, ACTIVE, ERROR, CANCELLING, CANCELLED)
TERMINAL_STATUSES = (ACTIVE, ERROR, CANCELLED)
UNFINISHED_STATUSES = (PENDING, CANCELLING)
#: The statuses of the orders a purge may delete: the finished ones.
PURGEABLE_STATUSES = TERMINAL_STATUSES

# The statuses of one step of an order.
#: Some step it comes after is not DONE yet.
STEP_WAITING = 'WAITING'
#: Runnable: cast and not taken up, running on a worker, or waiting for a
#: retry row (the step's row tells which).
STEP_PENDING = 'PENDING'
STEP_DONE = 'DONE'
STEP_FAILED = 'FAILED'
STEP_CANCELLED = 'CANCELLED'
STEP_STATUSES = (STEP_WAITING, STEP_PENDING, STEP_DONE, STEP_FAILED,
                 STEP_CANCELLED)

ORDER_RETRY_TASK_LOCK = 'OrderRetryTask'
#: The lock of the retry daemons' purge (``[database] retention_days``),
#: kept once a purge ends: its ``created_at`` is when the last one did.
ORDER_PURGE_LOCK = 'OrderPurge'

#: The project of the orders created before projects existed (migration
#: 0007), and of those the operator commands create without ``--project``.
DEFAULT_PROJECT = 'default'

# An order's priority: when more retry rows are due than one pass casts,
# those of higher priority are cast first. 0 to 9, the ten levels of
# AMQP 0-9-1 message priorities: enough to tell classes of orders apart,
# and few because the due query reads each level with a query of its own
# (``retry_tasks.due``), so each level costs a pass one index probe.
MIN_PRIORITY = 0
MAX_PRIORITY = 9

# The kinds of process in ``services``.
WORKER = 'worker'
SCHEDULER = 'scheduler'


def check_priority(priority):
    """Return ``priority``; raise ValueError if it is not a priority.

    A row of another priority would never be read by the due query.
    """
    if not isinstance(priority, int) or isinstance(priority, bool) or \
            not MIN_PRIORITY <= priority <= MAX_PRIORITY:
        raise ValueError('priority must be an integer from %d to %d, not %r'
                         % (MIN_PRIORITY, MAX_PRIORITY, priority))
    return priority


def check_purgeable(statuses: typing.Iterable[str]) -> tuple[str, ...]:
    """Return ``statuses`` as a tuple, each once.

    :raises ValueError: one of them is not a finished status (PENDING and
        CANCELLING orders are never purged: work on them goes on), or
        there is none.
    """
    checked = tuple(dict.fromkeys(statuses))
    wrong = [status for status in checked
             if status not in PURGEABLE_STATUSES]
    if wrong or not checked:
        raise ValueError(
            'only finished orders are purged: statuses among %s, not %s'
            % (', '.join(PURGEABLE_STATUSES), ', '.join(wrong) or 'none'))
    return checked


class Base(orm.DeclarativeBase):
    """Declarative base of every barbican-retry table."""

    metadata = sa.MetaData(naming_convention={
        'ix': 'ix_%(table_name)s_%(column_0_N_name)s',
        'uq': 'uq_%(table_name)s_%(column_0_N_name)s',
        'fk': 'fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s',
        'pk': 'pk_%(table_name)s',
        'ck': 'ck_%(table_name)s_%(constraint_name)s',
    })


#: The indexes that a migration creates on one backend only and the models
#: do not declare (a model's index is every backend's), by dialect name:
#: ``tests/functional/test_migrations.py`` leaves them out of its
#: comparison. ``ix_orders_meta_path_ops``: GIN over ``CAST(meta AS
#: JSONB)`` for the search by metadata (migration 0018,
#: ``worker.db.meta_search``).
BACKEND_ONLY_INDEXES = {'postgresql': ('ix_orders_meta_path_ops',)}


class Order(Base):
    """A long-running request tracked from PENDING to a terminal status.

    ``type`` names its order type, which declares the order's steps; their
    state is in ``order_steps``. The order turns ACTIVE when every step is
    DONE, ERROR when one step fails for good, and CANCELLING then CANCELLED
    when an operator cancels it.
    """

    __tablename__ = 'orders'
    __table_args__ = (
        # One order per key and project: a second create with the key
        # finds the first order (``worker.api``). NULL keys never collide.
        sa.Index('uq_orders_project_id_idempotency_key', 'project_id',
                 'idempotency_key', unique=True),
        # A project's orders in creation order, a page at a time.
        sa.Index('ix_orders_project_id_created_at', 'project_id',
                 'created_at', 'id'),
        # The finished orders older than a moment, oldest first, a batch
        # at a time (``db purge``).
        sa.Index('ix_orders_status_updated_at', 'status', 'updated_at'),
        # The PENDING orders of one type (``[order_type:T] max_pending``).
        sa.Index('ix_orders_type_status', 'type', 'status'),
        # The PENDING orders of one project (``[quota]
        # pending_orders_per_project``).
        sa.Index('ix_orders_project_id_status', 'project_id', 'status'),
    )

    id: orm.Mapped[str] = orm.mapped_column(sa.String(36), primary_key=True)
    type: orm.Mapped[str] = orm.mapped_column(sa.String(32))
    status: orm.Mapped[str] = orm.mapped_column(sa.String(16), index=True)
    meta: orm.Mapped[dict] = orm.mapped_column(sa.JSON, default=dict)
    error_reason: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    #: ``MIN_PRIORITY`` to ``MAX_PRIORITY``, higher sooner; copied to the
    #: order's retry rows.
    priority: orm.Mapped[int] = orm.mapped_column(
        sa.SmallInteger, default=0, server_default='0')
    #: The project (tenant) that owns the order; ``DEFAULT_PROJECT`` for
    #: the orders created before projects (migration 0007).
    project_id: orm.Mapped[str] = orm.mapped_column(
        ExactString(64), default=DEFAULT_PROJECT,
        server_default=DEFAULT_PROJECT)
    #: The caller's key for this order, unique within its project (case
    #: and trailing spaces count: ``ExactString``).
    idempotency_key: orm.Mapped[str | None] = orm.mapped_column(
        ExactString(255))
    #: SHA-256 of the request that created the order (its type, meta,
    #: priority and callback URLs), to tell a retried request from a
    #: different one with the same key.
    request_hash: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    #: The oslo.context request ids of the request that created the
    #: order; every log line about the order carries them.
    request_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    global_request_id: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(64))
    #: When its first steps run (their retry rows are due then); None
    #: for at once.
    not_before: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        Timestamp)
    #: The ``Schedule`` that created it, if one did.
    schedule_id: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(36), index=True)
    #: The W3C trace context (``traceparent``, ``tracestate``) of the
    #: request that created it, so that a step run days later joins its
    #: trace; None when tracing was off.
    trace_context: orm.Mapped[dict | None] = orm.mapped_column(sa.JSON)
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)
    updated_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)
    #: The version of its type's graph it was created with
    #: (``worker.order_types.base.workflow_version``): the one graph a
    #: worker applies to it. NULL for the orders created before versions
    #: were recorded (migration 0017): they run on the graph their type
    #: declared at the upgrade, the declared graph whose steps are their
    #: rows (``Workflow.of_order``).
    workflow_version: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(64))


class OrderStep(Base):
    """One step of one order, and its fencing token.

    ``generation`` is the step's fencing token: every dispatch of the step
    carries the generation it was made for, a worker takes the step by
    moving the generation forward, and every later write is conditional on
    it. A duplicate or stale message therefore finds a newer generation
    and has no effect. Parallel steps of one order have tokens of their
    own, so they never overwrite each other.

    A PENDING step is in one of three places, which the retry scheduler
    reads to find work that was lost:

    - waiting: it has a retry row; ``owner`` and ``dispatched_at`` are NULL;
    - dispatched: it was cast at ``dispatched_at`` and no worker has taken
      it yet (``owner`` NULL, no retry row);
    - claimed: ``owner`` (a service name, ``pid@host``) runs it until
      ``lease_expires_at`` at the latest.
    """

    __tablename__ = 'order_steps'
    __table_args__ = (
        # The open deliveries (``notify:*`` steps PENDING or WAITING): a
        # range of this index, however many finished steps there are.
        sa.Index('ix_order_steps_status_name', 'status', 'name'),
    )

    order_id: orm.Mapped[str] = orm.mapped_column(
        sa.String(36), sa.ForeignKey('orders.id', ondelete='CASCADE'),
        primary_key=True)
    name: orm.Mapped[str] = orm.mapped_column(sa.String(64),
                                              primary_key=True)
    status: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    generation: orm.Mapped[int] = orm.mapped_column(sa.Integer, default=0)
    #: Runs started (claims).
    attempt: orm.Mapped[int] = orm.mapped_column(sa.Integer, default=0)
    #: Runs that failed and were retried, or lost their lease.
    failures: orm.Mapped[int] = orm.mapped_column(sa.Integer, default=0)
    #: Times the step asked to be polled again (R-1).
    polls: orm.Mapped[int] = orm.mapped_column(sa.Integer, default=0)
    #: Times the process running the step died (stopped heartbeating)
    #: before its result was written; at ``[worker] max_step_crashes``
    #: the step fails instead of running again (a poison step).
    crashes: orm.Mapped[int] = orm.mapped_column(
        sa.Integer, default=0, server_default='0')
    owner: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255), index=True)
    claimed_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        Timestamp)
    lease_expires_at: orm.Mapped[datetime.datetime | None] = \
        orm.mapped_column(Timestamp, index=True)
    dispatched_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        Timestamp, index=True)
    started_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        Timestamp)
    finished_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        Timestamp)
    last_error: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    #: What the step returned (``Completed.meta``), for the steps after it.
    output: orm.Mapped[dict | None] = orm.mapped_column(sa.JSON)
    updated_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)


#: The results of a run in ``order_step_runs``.
RUN_DONE = 'done'
#: Failed and retried, or asked to be polled again.
RUN_RETRY = 'retry'
RUN_FAILED = 'failed'
#: Its process died or its lease ended: the retry daemon took it back.
RUN_TAKEN_BACK = 'taken back'
#: It ended after another run took its step (or its order ended): its
#: result was not applied.
RUN_SUPERSEDED = 'superseded'
#: Not a run: a cancel or a resume that someone asked for (step
#: ``RUN_CANCEL`` or ``RUN_RESUME``), with who asked in ``requested_by``.
RUN_REQUESTED = 'requested'
RUN_RESULTS = (RUN_DONE, RUN_RETRY, RUN_FAILED, RUN_TAKEN_BACK,
               RUN_SUPERSEDED, RUN_REQUESTED)
#: The ``step`` of a history row that records a cancel or a resume: no
#: step can have these names (a step name has no colon).
RUN_CANCEL = 'order:cancel'
RUN_RESUME = 'order:resume'
#: A run's error is kept to this many characters.
RUN_ERROR_LENGTH = 1000


class OrderStepRun(Base):
    """One run of one step of an order, written when the run ended.

    A run is one claim: ``generation`` is the token it held, ``attempt``
    the step's ``attempt`` after its claim, ``worker`` the process that
    claimed it (``pid@host``). Written in the transaction of its result
    (``worker.steps.writes``), or of the take-back that ended it
    (``scheduler.recovery``); a run that is still going has no row yet
    (its step's ``owner`` and ``claimed_at`` tell). Deleted with its order.

    A cancel or a resume is a row too (``RUN_CANCEL``, ``RUN_RESUME``,
    result ``RUN_REQUESTED``), written in its transaction
    (``worker.api.commands``), with who asked in ``requested_by``.
    """

    __tablename__ = 'order_step_runs'
    __table_args__ = (
        # An order's history, in the order it was written.
        sa.Index('ix_order_step_runs_order_id_id', 'order_id', 'id'),
        {'sqlite_autoincrement': True},
    )

    id: orm.Mapped[int] = orm.mapped_column(
        BigId, primary_key=True, autoincrement=True)
    order_id: orm.Mapped[str] = orm.mapped_column(
        sa.String(36), sa.ForeignKey('orders.id', ondelete='CASCADE'))
    step: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    generation: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    attempt: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    worker: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    started_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        Timestamp)
    finished_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        Timestamp)
    #: One of ``RUN_RESULTS``.
    result: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    #: The run's error, at most ``RUN_ERROR_LENGTH`` characters.
    error: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    #: Who asked for a cancel or a resume (``worker.api.Requester``'s
    #: fields); None on a run of a step.
    requested_by: orm.Mapped[dict | None] = orm.mapped_column(sa.JSON)


class OrderRetryTask(Base):
    """A task to cast again to the workers at or after ``retry_at``.

    ``retry_task`` names the step of the order to run again, and
    ``priority`` is its order's, copied when the row is written so that the
    due query orders rows without reading their orders.

    Ids are never reused, on SQLite too (AUTOINCREMENT): a row the
    scheduler read is still that row, or gone, when it deletes it by id.

    ``retry_args`` and ``retry_kwargs`` are stored as JSON text and decoded
    by the scheduler row by row, so that one malformed row is set aside
    (``parked``) without failing the batch it was read in.
    """

    __tablename__ = 'order_retry_tasks'
    __table_args__ = (
        # "Is anything due" and "when is the next row due" are "parked =
        # false AND retry_at <= now" (or > moment) by retry_at: one probe
        # of this index, whatever the priorities.
        sa.Index('ix_order_retry_tasks_due', 'parked', 'retry_at', 'id'),
        # The due batch reads each priority level by retry_at, id: "parked
        # = false AND priority = p AND retry_at <= now" is one range of
        # this index, read only as far as the batch needs.
        # The oldest row waiting for a resource key's slot.
        sa.Index('ix_order_retry_tasks_waiting_for', 'waiting_for', 'id'),
        sa.Index('ix_order_retry_tasks_priority_due', 'parked', 'priority',
                 'retry_at', 'id'),
        # Without it SQLite gives a new row the highest id plus one, the
        # id of a row just deleted.
        {'sqlite_autoincrement': True},
    )

    id: orm.Mapped[int] = orm.mapped_column(
        BigId, primary_key=True, autoincrement=True)
    order_id: orm.Mapped[str] = orm.mapped_column(
        sa.String(36), sa.ForeignKey('orders.id', ondelete='CASCADE'),
        index=True)
    retry_task: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    retry_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)
    retry_args: orm.Mapped[str] = orm.mapped_column(sa.Text)
    retry_kwargs: orm.Mapped[str] = orm.mapped_column(sa.Text)
    retry_count: orm.Mapped[int] = orm.mapped_column(sa.Integer, default=0)
    priority: orm.Mapped[int] = orm.mapped_column(
        sa.SmallInteger, default=0, server_default='0')
    parked: orm.Mapped[bool] = orm.mapped_column(sa.Boolean, default=False)
    park_reason: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    #: The resource key whose slot the step waits for (its run could not
    #: take one), or None: a step that frees a slot of the key wakes the
    #: oldest row waiting for it, before its ``retry_at``.
    waiting_for: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)


class ResourceSlot(Base):
    """One slot of a resource key, held by one run of a step.

    A step that uses resources (``worker.order_types.base.Step.
    resources``, and the implicit keys of ``max_running``) is claimed only
    if it takes a slot of each, in the claim's transaction; at most
    ``[resource:PREFIX] capacity`` slots of a key exist (``slot`` from 0),
    and ``(key, slot)`` is the primary key, so two claims cannot take the
    same slot. The holder is the run: ``(order_id, step, generation)``
    with the run's token; the run's result, or the recovery that takes the
    step back, deletes the row by that token, so a stale run cannot free
    a slot it no longer holds.
    """

    __tablename__ = 'resource_slots'
    __table_args__ = (
        sa.Index('ix_resource_slots_order_id_step', 'order_id', 'step'),
    )

    key: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                             primary_key=True)
    slot: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    order_id: orm.Mapped[str] = orm.mapped_column(
        sa.String(36), sa.ForeignKey('orders.id', ondelete='CASCADE'))
    step: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    generation: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    taken_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)


class ResourceStart(Base):
    """One of the N starts per period of a resource key with a ``rate``.

    A key whose rate is N per period has rows ``slot`` 0 to N-1, each
    holding when it was last used; a start takes a row last used at least
    a period ago (a conditional UPDATE), so no period of that length ever
    holds more than N starts, across every worker and host. When none is
    free, the step is retried when the oldest becomes free.
    """

    __tablename__ = 'resource_starts'

    key: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                             primary_key=True)
    slot: orm.Mapped[int] = orm.mapped_column(sa.Integer, primary_key=True)
    started_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)


class Schedule(Base):
    """Orders created on a schedule: every ``every_seconds``, or at the
    times of the cron expression ``cron`` (in ``timezone``), one of the
    two.

    The retry daemons create the order of each tick (``next_tick_at``)
    with the idempotency key ``schedule:<id>:<tick>`` in the schedule's
    project: whichever daemons see the tick, it makes one order.
    """

    __tablename__ = 'schedules'

    id: orm.Mapped[str] = orm.mapped_column(sa.String(36), primary_key=True)
    project_id: orm.Mapped[str] = orm.mapped_column(ExactString(64))
    type: orm.Mapped[str] = orm.mapped_column(sa.String(32))
    meta: orm.Mapped[dict] = orm.mapped_column(sa.JSON, default=dict)
    priority: orm.Mapped[int] = orm.mapped_column(
        sa.SmallInteger, default=0, server_default='0')
    every_seconds: orm.Mapped[int | None] = orm.mapped_column(sa.Integer)
    cron: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    #: The next tick to create an order for.
    next_tick_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        Timestamp, index=True)
    last_tick_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        Timestamp)
    last_order_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(36))
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)
    updated_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)
    #: The IANA time zone ``cron`` is read in (migration 0019).
    timezone: orm.Mapped[str] = orm.mapped_column(
        sa.String(64), default='UTC', server_default='UTC')
    #: What a tick does while the last order is open:
    #: ``worker.common.ticks.OVERLAP_POLICIES``.
    overlap: orm.Mapped[str] = orm.mapped_column(
        sa.String(16), default='allow', server_default='allow')
    #: The tick a ``buffer-one`` schedule holds until its open order
    #: ends; indexed, the daemons look for these at each look.
    buffered_tick_at: orm.Mapped[datetime.datetime | None] = \
        orm.mapped_column(Timestamp, index=True)


class ProjectQuota(Base):
    """A project whose creates are counted against a quota of PENDING
    orders.

    ``pending_orders`` is the project's own bound, set by the admin, or
    NULL for ``[quota] pending_orders_per_project``. The project's counted
    creates hold the row (an UPDATE of ``held_at``) for their transaction,
    so that they count and insert one after the other.
    """

    __tablename__ = 'project_quotas'

    project_id: orm.Mapped[str] = orm.mapped_column(ExactString(64),
                                                    primary_key=True)
    pending_orders: orm.Mapped[int | None] = orm.mapped_column(sa.Integer)
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)
    updated_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)
    #: When a create last held the row (a write, so that two creates on
    #: two Galera nodes conflict at COMMIT).
    held_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)


class OrderSignal(Base):
    """A named message sent to an order, for the step that waits for it.

    Written by ``OrderAPI.signal`` under its order's lock, so that the
    ids of one order's signals are in the order they were sent; a step
    that declares the name sees the unconsumed ones at its claim, and the
    run that completes it consumes them (``consumed_at``, ``consumed_by``
    its step). ``signal_id`` is the caller's key (or a generated one),
    unique within the order: a signal sent twice is stored once. Deleted
    with its order.
    """

    __tablename__ = 'order_signals'
    __table_args__ = (
        # A repeated signal_id finds the first; an order's signals are
        # one range of it (a few rows, sorted by id).
        sa.UniqueConstraint('order_id', 'signal_id'),
        {'sqlite_autoincrement': True},
    )

    id: orm.Mapped[int] = orm.mapped_column(
        BigId, primary_key=True, autoincrement=True)
    order_id: orm.Mapped[str] = orm.mapped_column(
        sa.String(36), sa.ForeignKey('orders.id', ondelete='CASCADE'))
    signal_id: orm.Mapped[str] = orm.mapped_column(ExactString(64))
    name: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    payload: orm.Mapped[typing.Any] = orm.mapped_column(sa.JSON,
                                                        nullable=True)
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)
    #: When a run that saw it completed its step, and that step; NULL
    #: while no step consumed it.
    consumed_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        Timestamp)
    consumed_by: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))


class EntityLock(Base):
    """A lock on a whole entity (table), held by one process at a time.

    ``owner_token`` is unique per acquisition, so a holder renews and
    releases only its own lock, never a successor's.
    """

    __tablename__ = 'entity_locks'

    entity_to_lock: orm.Mapped[str] = orm.mapped_column(
        sa.String(64), primary_key=True)
    worker_host_name: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    owner_token: orm.Mapped[str] = orm.mapped_column(sa.String(36))
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)


class Service(Base):
    """A running barbican-worker or barbican-retry process.

    Each process writes ``heartbeat_at`` several times per
    ``[DEFAULT] service_down_time`` and deletes its row when it stops
    cleanly. A row whose heartbeat is older than that belongs to a dead
    process: the orders it owned are taken back.
    """

    __tablename__ = 'services'

    name: orm.Mapped[str] = orm.mapped_column(sa.String(255),
                                              primary_key=True)
    kind: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    host: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    pid: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    started_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)
    heartbeat_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        Timestamp, index=True)
    # Retry daemons only: when their last pass ran and the next is due.
    last_pass_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        Timestamp)
    next_pass_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        Timestamp)
    # Seconds the database server's clock was ahead of this process's host
    # at its last heartbeat (negative: behind); ``worker.common.clock``.
    clock_offset: orm.Mapped[float | None] = orm.mapped_column(sa.Float)
    # Workers only: the RPC topic the process serves ([worker] topic, or
    # barbican-worker --topic).
    topic: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))


#: The prefix of a delivery's step name: ``notify:<notification_urls.id>``.
DELIVERY_PREFIX = 'notify:'


def delivery_name(url_id):
    """The step name of a delivery to the URL ``url_id``."""
    return '%s%d' % (DELIVERY_PREFIX, url_id)


def url_hash(url):
    """The key of ``url`` in ``notification_urls``: its SHA-256, in hex."""
    return hashlib.sha256(url.encode('utf-8')).hexdigest()


def url_id_of(step):
    """The URL id of a delivery's step name, or None for another step."""
    if not step.startswith(DELIVERY_PREFIX):
        return None
    digits = step[len(DELIVERY_PREFIX):]
    return int(digits) if digits.isascii() and digits.isdigit() else None


def is_delivery(step):
    """True if ``step`` names a delivery of notifications: the one test of
    a step's kind by its name (``worker.steps.kinds``)."""
    return url_id_of(step) is not None


def delivery_steps(column):
    """The SQL form of ``is_delivery`` on a column of step names.

    A name of the prefix and something else than an id is no step the
    project writes: the prefix alone tells them apart in SQL.
    """
    return column.like(DELIVERY_PREFIX + '%')


class NotificationUrl(Base):
    """A URL that receives the events of orders (``worker.notifications``).

    Each order subscribed to it has a delivery: a step of the order named
    ``notify:<id>``, which runs, is fenced, retried and recovered like any
    other step. ``available`` turns false after a delivery to it failed
    ``[notifications] max_consecutive_failures`` times in a row; its
    deliveries then wait (their steps WAITING) until an operator enables
    it again.
    """

    __tablename__ = 'notification_urls'
    __table_args__ = ({'sqlite_autoincrement': True},)

    id: orm.Mapped[int] = orm.mapped_column(
        BigId, primary_key=True, autoincrement=True)
    url: orm.Mapped[str] = orm.mapped_column(sa.Text)
    #: SHA-256 of ``url``: a unique index on the text itself would be
    #: too long for MariaDB.
    url_hash: orm.Mapped[str] = orm.mapped_column(sa.String(64),
                                                  unique=True)
    available: orm.Mapped[bool] = orm.mapped_column(sa.Boolean,
                                                    default=True)
    #: Requests that failed since the last one acknowledged.
    failures: orm.Mapped[int] = orm.mapped_column(sa.Integer, default=0)
    last_error: orm.Mapped[str | None] = orm.mapped_column(sa.Text)
    last_failure_at: orm.Mapped[datetime.datetime | None] = \
        orm.mapped_column(Timestamp)
    disabled_at: orm.Mapped[datetime.datetime | None] = orm.mapped_column(
        Timestamp)
    #: The Standard Webhooks secret (``whsec_…``) that signs requests to
    #: the URL; None until ``notification url set-secret``.
    secret: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    #: The secret it replaced, which also signs until
    #: ``previous_secret_until`` (a rotation).
    previous_secret: orm.Mapped[str | None] = orm.mapped_column(
        sa.String(255))
    previous_secret_until: orm.Mapped[datetime.datetime | None] = \
        orm.mapped_column(Timestamp)
    #: The project whose orders alone may name the URL once it has a
    #: secret of its own (``notification url set-secret --project``);
    #: NULL: any project's (a URL without a secret, or one the operator
    #: made global with ``--global``).
    project_id: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)
    #: When the row was last written: a delivery that stops to wait for
    #: the URL writes it, so that it conflicts with ``enable_url`` even on
    #: a Galera cluster, where only writes do (``hold_url``).
    updated_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)


class NotificationEvent(Base):
    """One event of one order, numbered from 1 per order (``sequence``).

    Written in the transaction of the change it reports; delivered in
    ``sequence`` order to each URL the order is subscribed to.
    """

    __tablename__ = 'notification_events'
    __table_args__ = (
        sa.UniqueConstraint('order_id', 'sequence'),
        {'sqlite_autoincrement': True},
    )

    id: orm.Mapped[int] = orm.mapped_column(
        BigId, primary_key=True, autoincrement=True)
    event_id: orm.Mapped[str] = orm.mapped_column(sa.String(36),
                                                  unique=True)
    order_id: orm.Mapped[str] = orm.mapped_column(
        sa.String(36), sa.ForeignKey('orders.id', ondelete='CASCADE'))
    sequence: orm.Mapped[int] = orm.mapped_column(sa.Integer)
    event: orm.Mapped[str] = orm.mapped_column(sa.String(32))
    #: The order's status after the change.
    status: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    #: The step a ``step.*`` event is about.
    step: orm.Mapped[str | None] = orm.mapped_column(sa.String(64))
    #: More about the change (``reason``), or None.
    detail: orm.Mapped[dict | None] = orm.mapped_column(sa.JSON)
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)


class ConsoleSession(Base):
    """A login to the operator console (``worker.rest.console``): the
    Keystone token it was given and what the token says of its holder.

    The row is found by the SHA-256 of the session cookie, never by the
    cookie itself: a reader of the table cannot take over a session. It
    is shared by every process of ``barbican-retry-api`` and ends when
    its token expires (``expires_at``), or at logout.
    """

    __tablename__ = 'console_sessions'

    #: The SHA-256 (hex) of the random cookie value.
    id: orm.Mapped[str] = orm.mapped_column(sa.String(64), primary_key=True)
    token: orm.Mapped[str] = orm.mapped_column(sa.Text)
    #: The synchronizer token every action of the session must carry.
    csrf_token: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    user_id: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    user_name: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    #: Shown and judged, never searched: no exact collation needed.
    project_id: orm.Mapped[str] = orm.mapped_column(sa.String(64))
    project_name: orm.Mapped[str] = orm.mapped_column(sa.String(255))
    #: The token's role names, comma-separated.
    roles: orm.Mapped[str] = orm.mapped_column(sa.String(1024))
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)
    expires_at: orm.Mapped[datetime.datetime] = orm.mapped_column(
        Timestamp, index=True)


#: What a pause holds (``Pause.target``): every step of an order type, of
#: the order types cast to a topic, every step that needs a resource key,
#: one order's steps, or a schedule's ticks.
PAUSE_TARGETS = ('order_type', 'topic', 'resource', 'order', 'schedule')


class Pause(Base):
    """Something an operator paused: ``(target, name)``, one of
    ``PAUSE_TARGETS`` and the type, topic, key, order id or schedule id.

    A step it holds is not claimed: it waits, as a step waiting for a
    resource slot does, on a retry row whose ``waiting_for`` is
    ``pause:<id>``; deleting the row (an unpause) makes those rows due in
    the same transaction. Ids are never reused (AUTOINCREMENT on SQLite),
    so that a step left waiting for a pause that was lifted and set again
    is not taken for one of the new pause's.
    """

    __tablename__ = 'pauses'
    __table_args__ = (
        # One pause per thing; the claim reads the whole (small) table, a
        # list of orders is one range of it.
        sa.UniqueConstraint('target', 'name'),
        {'sqlite_autoincrement': True},
    )

    id: orm.Mapped[int] = orm.mapped_column(
        BigId, primary_key=True, autoincrement=True)
    target: orm.Mapped[str] = orm.mapped_column(sa.String(16))
    name: orm.Mapped[str] = orm.mapped_column(ExactString(255))
    reason: orm.Mapped[str | None] = orm.mapped_column(sa.String(255))
    #: The project of a paused order (whose members may unpause it), or
    #: None for what only an admin pauses.
    project_id: orm.Mapped[str | None] = orm.mapped_column(ExactString(64))
    created_at: orm.Mapped[datetime.datetime] = orm.mapped_column(Timestamp)
