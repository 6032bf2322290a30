"""The state of a deployment on one screen (``barbican-retry-manage status``).

Read-only, in one transaction: the processes and their heartbeats (and,
for retry daemons, their last and next pass), the pass lock as the daemons
judge it, the retry rows due now, later and parked, the orders by status,
and the oldest PENDING order with the sentence ``order explain`` gives.
Liveness and lock staleness follow the daemons' own rules
(``scheduler.liveness``, ``scheduler.pass_lock``).
"""

import dataclasses
import datetime

from scheduler import liveness
from scheduler.manage import explain
from scheduler import pass_lock
from worker.db import models


@dataclasses.dataclass(frozen=True)
class Process:
    """A barbican-retry or barbican-worker process, from its heartbeat."""

    name: str
    kind: str
    host: str
    pid: int
    started_at: datetime.datetime
    heartbeat_at: datetime.datetime
    alive: bool
    #: Retry daemons only: when the last pass ended and the next is due.
    last_pass_at: datetime.datetime | None
    next_pass_at: datetime.datetime | None
    #: The database's clock minus the process's host's, at its last
    #: heartbeat, in seconds (``worker.common.clock``); None if unknown.
    clock_offset: float | None


@dataclasses.dataclass(frozen=True)
class RetryRows:
    """Retry rows by what waits for them."""

    due_now: int
    later: int
    parked: int


@dataclasses.dataclass(frozen=True)
class PendingOrder:
    """The oldest PENDING order and why it has not moved."""

    id: str
    type: str
    created_at: datetime.datetime
    age_seconds: float
    explanation: str


@dataclasses.dataclass(frozen=True)
class Overview:
    """Everything ``status`` shows, read at ``now``."""

    now: datetime.datetime
    processes: list
    lock: pass_lock.LockState
    retry_rows: RetryRows
    #: ``{status: count}``, every status present.
    orders: dict
    oldest_pending: PendingOrder | None

    def alive(self, kind):
        """The live processes of ``kind`` (``models.WORKER``, …)."""
        return [process for process in self.processes
                if process.kind == kind and process.alive]


def take(database, conf, now):
    """Read the ``Overview`` of the deployment as of ``now`` (naive UTC)."""
    repositories = database.repositories
    cutoffs = liveness.Cutoffs.at(now, conf)
    with database.reader() as session, session.begin():
        services = repositories.services.list_services(session)
        lock = pass_lock.judge(session, repositories, cutoffs)
        retry_rows = RetryRows(
            due_now=repositories.retry_tasks.count_due(session, now),
            later=database.queries.retry_tasks.count_later(session, now),
            parked=repositories.retry_tasks.count_parked(session))
        counts = database.queries.orders.count_by_status(session)
        oldest = database.queries.orders.list_orders(
            session, status=models.PENDING, limit=1)
    processes = [Process(
        name=row.name, kind=row.kind, host=row.host, pid=row.pid,
        started_at=row.started_at, heartbeat_at=row.heartbeat_at,
        alive=cutoffs.is_alive(row.heartbeat_at),
        last_pass_at=row.last_pass_at, next_pass_at=row.next_pass_at,
        clock_offset=row.clock_offset)
        for row in services]
    return Overview(
        now=now, processes=processes, lock=lock, retry_rows=retry_rows,
        orders={status: counts.get(status, 0)
                for status in models.ORDER_STATUSES},
        oldest_pending=_pending(database, conf, oldest, now))


def _pending(database, conf, oldest, now):
    if not oldest:
        return None
    [order] = oldest
    # Read again, in a transaction of its own: if the order has moved on
    # meanwhile, the sentence says so.
    sentence = explain.explain_order(database, conf, order.id, now).sentence
    return PendingOrder(
        id=order.id, type=order.type, created_at=order.created_at,
        age_seconds=(now - order.created_at).total_seconds(),
        explanation=sentence)
