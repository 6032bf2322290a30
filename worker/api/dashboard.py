"""``Dashboard``: what the operator console shows, read through the
repositories and the API's queries (``worker.db.queries``) within the
caller's scope, as ``OrderAPI`` reads orders.

Every read is bounded by what is displayed: counts grouped by status
and type, the creation and completion times of the last minutes, the
processes and a few steps each holds, one order's rows. A process is
alive, as the retry daemon judges it, if its last heartbeat is at most
``[DEFAULT] service_down_time`` old.
"""

import collections
import dataclasses
import datetime

from worker.api import checks
from worker.db import models

#: Minutes of the creations and completions chart.
CHART_MINUTES = 15
#: The steps shown of each live process.
HELD_SHOWN = 20


@dataclasses.dataclass(frozen=True)
class Process:
    """A worker or retry daemon, by its heartbeat."""

    name: str
    kind: str
    host: str
    pid: int
    started_at: datetime.datetime
    heartbeat_age: float
    alive: bool
    next_pass_at: datetime.datetime | None
    #: ``(order id, step)`` of up to ``HELD_SHOWN`` steps it runs.
    held: tuple


@dataclasses.dataclass(frozen=True)
class Deployment:
    """The processes, the pass lock's holder and the retry rows."""

    processes: list
    lock_holder: str | None
    lock_taken_at: datetime.datetime | None
    due_now: int
    later: int
    parked: int

    def alive(self, kind):
        """The live processes of ``kind`` (``worker``, ``scheduler``)."""
        return [found for found in self.processes
                if found.kind == kind and found.alive]


@dataclasses.dataclass(frozen=True)
class Overview:
    """Orders by status and type, per-minute rates, the oldest PENDING
    order, and for a caller of every project the deployment."""

    now: datetime.datetime
    #: ``{(status, type): count}``.
    counts: dict
    #: ``[(minute, created, completed)]``, oldest first.
    per_minute: list
    #: The oldest PENDING order (without steps), or None.
    oldest_pending: object
    #: A ``Deployment``, or None for a caller of one project.
    deployment: Deployment | None


@dataclasses.dataclass(frozen=True)
class OrderDetail:
    """One order beside its history, events and explanation."""

    order: object
    history: tuple
    events: list
    explanation: str


class Dashboard:
    """The console's reads.

    :param orders: the ``worker.api.OrderAPI`` whose database it reads.
    :param conf: the ``ConfigOpts`` of the process.
    """

    def __init__(self, orders, conf):
        self._orders = orders
        self._conf = conf

    @property
    def _database(self):
        return self._orders.database

    def overview(self, *, project_id=None, all_projects=False):
        """The ``Overview`` as of now."""
        project = checks.scope(project_id, all_projects)
        now = self._orders.now()
        since = _minute(now) - datetime.timedelta(minutes=CHART_MINUTES - 1)
        queries = self._database.queries.orders
        with self._database.reader() as session, session.begin():
            counts = queries.count_by_status_and_type(session, project)
            created = queries.times_since(session, since, project_id=project)
            completed = queries.times_since(session, since, finished=True,
                                            project_id=project)
        oldest = self._orders.list(project_id=project_id,
                                   all_projects=all_projects,
                                   status=models.PENDING, limit=1,
                                   with_meta=False)
        return Overview(
            now=now, counts=counts,
            per_minute=_per_minute(since, created, completed),
            oldest_pending=oldest[0] if oldest else None,
            deployment=self.deployment(now) if project is None else None)

    def order(self, order_id, *, project_id=None, all_projects=False):
        """The ``OrderDetail`` of an order the caller may see.

        :raises worker.api.OrderNotFound: none (in ``project_id``).
        """
        order = self._orders.get(order_id, project_id=project_id,
                                 all_projects=all_projects)
        history = self._orders.history(order.id, project_id=project_id,
                                       all_projects=all_projects)
        repositories = self._database.repositories
        with self._database.reader() as session, session.begin():
            events = repositories.notifications.events_of_order(session,
                                                                order.id)
        return OrderDetail(order=order, history=history, events=events,
                           explanation=explain(order))

    def deployment(self, now=None):
        """The ``Deployment`` (every project's: an administrator's)."""
        now = now or self._orders.now()
        repositories = self._database.repositories
        alive_since = now - datetime.timedelta(
            seconds=self._conf.service_down_time)
        with self._database.reader() as session, session.begin():
            services = repositories.services.list_services(session)
            lock = repositories.locks.get(session,
                                          models.ORDER_RETRY_TASK_LOCK)
            due = repositories.retry_tasks.count_due(session, now)
            later = self._database.queries.retry_tasks.count_later(session,
                                                                   now)
            parked = repositories.retry_tasks.count_parked(session)
            held = {row.name: tuple(
                (step.order_id, step.step)
                for step in repositories.steps.owned_by(
                    session, [row.name], HELD_SHOWN))
                for row in services if row.heartbeat_at >= alive_since}
        processes = [Process(
            name=row.name, kind=row.kind, host=row.host, pid=row.pid,
            started_at=row.started_at,
            heartbeat_age=(now - row.heartbeat_at).total_seconds(),
            alive=row.heartbeat_at >= alive_since,
            next_pass_at=row.next_pass_at, held=held.get(row.name, ()))
            for row in services]
        return Deployment(
            processes=processes,
            lock_holder=lock.worker_host_name if lock else None,
            lock_taken_at=lock.created_at if lock else None,
            due_now=due, later=later, parked=parked)


def explain(order):
    """Why ``order`` (an ``Order`` with its steps) is where it is, in
    words, from its steps' states."""
    if order.status != models.PENDING:
        reason = ': %s' % order.error_reason if order.error_reason else ''
        return 'the order is %s%s' % (order.status, reason)
    parts = [_step_words(step) for step in order.steps
             if step.status not in ('DONE', 'WAITING')]
    waiting = [step.name for step in order.steps if step.status == 'WAITING']
    if waiting:
        parts.append('%s wait%s for the steps before them' % (
            ', '.join(waiting), 's' if len(waiting) == 1 else ''))
    return '; '.join(parts) or 'every step is done'


def _step_words(step):
    if step.status == 'RUNNING':
        return '%s is running on %s' % (step.name, step.owner)
    if step.status == 'RETRYING':
        error = ' after "%s"' % step.last_error if step.last_error else ''
        at = step.next_retry_at.isoformat(sep=' ', timespec='seconds')
        return '%s is retried at %s UTC%s (%d runs so far)' % (
            step.name, at, error, step.attempt)
    if step.status == 'QUEUED':
        if step.waiting_for:
            return '%s waits for a free slot of %s' % (step.name,
                                                       step.waiting_for)
        return '%s was sent to the workers and not taken up yet' % step.name
    if step.status == 'PARKED':
        return ('%s is parked: an operator sets its retry row going again'
                % step.name)
    return '%s is %s' % (step.name, step.status)


def _minute(moment):
    return moment.replace(second=0, microsecond=0)


def _per_minute(since, created, completed):
    made = collections.Counter(_minute(moment) for moment in created)
    done = collections.Counter(_minute(moment) for moment in completed)
    minutes = [since + datetime.timedelta(minutes=index)
               for index in range(CHART_MINUTES)]
    return [(minute, made[minute], done[minute]) for minute in minutes]
