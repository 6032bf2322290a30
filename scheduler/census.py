"""The state that the database holds and the metrics show: a census.

The counters of a process say what it did; what the whole deployment is
in (processes alive by their heartbeats, unfinished orders, parked rows,
deliveries of notifications waiting, unavailable callback URLs, pauses)
only the database knows. A retry daemon with metrics enabled reads it
every ``report_interval`` (``scheduler.service``) and exports it as
gauges (``scheduler.metrics``). Every daemon exports the same values:
rules and dashboards take their ``max``.

Each count reads an index: the finished orders and the rows waiting,
which pile up, are not counted.
"""

import dataclasses
import datetime

from worker.db import models

#: The states of ``Census.deliveries_waiting``.
SENDING = 'sending'
PAUSED = 'paused'


@dataclasses.dataclass(frozen=True)
class Census:
    """Counts read from the database in one transaction."""

    #: ``{kind: count}`` of the processes alive by their heartbeats, every
    #: kind of ``models`` present (0 when none is alive).
    services_alive: dict
    #: ``{status: count}`` of the unfinished orders, every unfinished
    #: status present.
    unfinished_orders: dict
    #: Retry rows set aside as uncastable.
    parked_rows: int
    #: ``{state: count}`` of the deliveries of notifications with events
    #: to send: ``sending`` (cast, running or retrying) and ``paused``
    #: (their URL is unavailable).
    deliveries_waiting: dict = dataclasses.field(default_factory=dict)
    #: Callback URLs marked unavailable.
    unavailable_urls: int = 0
    #: ``{target: count}`` of the pauses, every target present.
    paused: dict = dataclasses.field(default_factory=dict)
    #: Pauses older than ``[scheduler] pause_alert_age_seconds``.
    pauses_too_old: int = 0


def take(database, cutoffs, conf):
    """Read a ``Census`` at ``cutoffs.now`` (a ``liveness.Cutoffs``),
    with ``conf``'s ``[scheduler] pause_alert_age_seconds``."""
    repositories = database.repositories
    with database.reader() as session, session.begin():
        live = repositories.services.list_services(session)
        unfinished = repositories.orders.count_unfinished_by_status(session)
        parked = repositories.retry_tasks.count_parked(session)
        deliveries = repositories.notifications.count_open_deliveries(
            session)
        unavailable = repositories.notifications.count_unavailable_urls(
            session)
        pauses = repositories.pauses.census(
            session, cutoffs.now - datetime.timedelta(
                seconds=conf.scheduler.pause_alert_age_seconds))
    alive = dict.fromkeys((models.SCHEDULER, models.WORKER), 0)
    for service in live:
        if cutoffs.is_alive(service.heartbeat_at):
            alive[service.kind] = alive.get(service.kind, 0) + 1
    return Census(
        services_alive=alive,
        unfinished_orders={status: unfinished.get(status, 0)
                           for status in models.UNFINISHED_STATUSES},
        parked_rows=parked,
        deliveries_waiting={
            SENDING: deliveries.get(models.STEP_PENDING, 0),
            PAUSED: deliveries.get(models.STEP_WAITING, 0)},
        unavailable_urls=unavailable,
        paused={target: pauses.get(target, (0, 0))[0]
                for target in models.PAUSE_TARGETS},
        pauses_too_old=sum(older for _, older in pauses.values()))
