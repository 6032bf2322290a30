"""Repository of notification URLs and events. SQL: the ORM for URLs
read or added one at a time and for events read back (ORM objects
returned); Core for the writes on the delivery path: counters and
availability as UPDATEs, events as one multi-row INSERT, a row held by
an UPDATE rather than ``SELECT ... FOR UPDATE`` (Galera), deliveries read
as column tuples. Every function takes the session first.

A delivery's state is a step of its order (``notify:<url id>``,
``worker.db.steps``): its ``output`` holds ``delivered_sequence``, the
last event its URL acknowledged.
"""

import collections.abc as abc
import datetime
import typing
import uuid

import sqlalchemy as sa
from sqlalchemy import orm

from worker.db import models
from worker.db import rows
from worker.db import statements
from worker import values

Moment = datetime.datetime

_Url = models.NotificationUrl
_Event = models.NotificationEvent
_Step = models.OrderStep
_STEPS = statements.STEPS
_URLS = typing.cast(sa.Table, _Url.__table__)
_EVENTS = typing.cast(sa.Table, _Event.__table__)


def find_url(session: orm.Session, url: str) -> rows.Url | None:
    """The ``NotificationUrl`` of ``url``, or None."""
    return session.scalars(sa.select(_Url).where(
        _Url.url_hash == models.url_hash(url))).one_or_none()


def add_url(session: orm.Session, url: str, now: Moment) -> rows.Url:
    """Insert ``url``, available; returns its row.

    :raises oslo_db.exception.DBDuplicateEntry: another process added it.
    """
    row = _Url(url=url, url_hash=models.url_hash(url), available=True,
               failures=0, created_at=now, updated_at=now)
    session.add(row)
    session.flush()
    return row


def get_urls(session: orm.Session,
             url_ids: abc.Collection[int]) -> dict[int, rows.Url]:
    """``{id: NotificationUrl}`` of those of ``url_ids`` that exist, in one
    read."""
    if not url_ids:
        return {}
    return {row.id: row for row in session.scalars(
        sa.select(_Url).where(_Url.id.in_(list(url_ids))))}


def list_urls(session: orm.Session) -> list[rows.Url]:
    """Every URL, by id."""
    return list(session.scalars(sa.select(_Url).order_by(_Url.id)))


def set_secret(session: orm.Session, url_id: int, secret: str,
               previous_until: Moment | None, now: Moment) -> None:
    """Give the URL a new Standard Webhooks ``secret``.

    With ``previous_until``, the secret it had (or, if it had none,
    ``[notifications] secret``: ``previous_secret`` stays NULL) also
    signs until then; a secret older than that one stops at once.
    Without, only the new one signs. One UPDATE that reads the old secret
    itself, so two rotations at once each keep the one they replaced.
    """
    values: list[tuple[typing.Any, typing.Any]] = [
        (_URLS.c.previous_secret, None), (_URLS.c.previous_secret_until,
                                          None)]
    if previous_until is not None:
        values = [(_URLS.c.previous_secret, _URLS.c.secret),
                  (_URLS.c.previous_secret_until, previous_until)]
    # NOTE: in this order: MySQL assigns from left to right, each
    # assignment seeing the ones before it; previous_secret must be given
    # the old secret before secret is replaced.
    statements.execute(session, sa.update(_URLS)
                       .where(_URLS.c.id == url_id)
                       .ordered_values(*values, (_URLS.c.secret, secret),
                                       (_URLS.c.updated_at, now)))


def replace_secrets(session: orm.Session, url_id: int,
                    old: tuple[str | None, str | None],
                    new: tuple[str | None, str | None]) -> bool:
    """Write ``new`` (secret, previous secret) if the URL's are still
    ``old``; False if they changed meanwhile (a ``set_secret``), which
    the caller reads again. One conditional UPDATE: no lock is held
    between the read and the write (``notification key rotate``)."""
    where = [_URLS.c.id == url_id]
    for column, value in zip((_URLS.c.secret, _URLS.c.previous_secret),
                             old):
        where.append(column.is_(None) if value is None else column == value)
    result = statements.execute(session, sa.update(_URLS).where(*where)
                                .values(secret=new[0],
                                        previous_secret=new[1]))
    return bool(result.rowcount)


def set_owner(session: orm.Session, url_id: int, project_id: str | None,
              now: Moment) -> None:
    """Make ``project_id`` the only project whose orders may name the URL;
    None: any project's (global)."""
    statements.execute(session, sa.update(_URLS)
                       .where(_URLS.c.id == url_id)
                       .values(project_id=project_id, updated_at=now))


def url_failed(session: orm.Session, url_id: int, now: Moment, error: str,
               disable: bool) -> None:
    """Count a failed request to the URL; ``disable``: make it unavailable.
    """
    values: dict[str, typing.Any] = dict(
        failures=_URLS.c.failures + 1, last_error=error,
        last_failure_at=now, updated_at=now)
    if disable:
        values.update(available=False, disabled_at=sa.func.coalesce(
            _URLS.c.disabled_at, now))
    statements.execute(session, sa.update(_URLS)
                       .where(_URLS.c.id == url_id).values(values))


def url_succeeded_many(session: orm.Session,
                       url_ids: abc.Collection[int]) -> None:
    """Requests to these URLs were acknowledged: their failures start
    again, in one UPDATE.

    Writes only those that had failures, so the deliveries of many orders
    to one URL do not all write its row.
    """
    if url_ids:
        statements.execute(session, sa.update(_URLS).where(
            _URLS.c.id.in_(sorted(set(url_ids))), _URLS.c.failures > 0)
            .values(failures=0))


def hold_url(session: orm.Session, url_id: int, now: Moment) -> bool:
    """Write the URL's row in this transaction; True if it is available.

    A delivery that stops to wait for its URL holds it until it commits,
    so ``enable_url``, which writes it first, finds that delivery waiting
    once it can go on. A write, not ``SELECT … FOR UPDATE``: on a Galera
    cluster a lock is local to its node, and only two writes of one row
    conflict (at COMMIT, where one of them is refused and retried).
    """
    statements.execute(session, sa.update(_URLS)
                       .where(_URLS.c.id == url_id).values(updated_at=now))
    return bool(session.scalar(sa.select(_Url.available)
                               .where(_Url.id == url_id)))


def enable_url(session: orm.Session, url_id: int, now: Moment) -> None:
    """Make the URL available again."""
    statements.execute(session, sa.update(_URLS)
                       .where(_URLS.c.id == url_id)
                       .values(available=True, failures=0,
                               disabled_at=None, updated_at=now))


def count_unavailable_urls(session: orm.Session) -> int:
    """How many URLs are unavailable."""
    return session.execute(sa.select(sa.func.count()).select_from(_Url)
                           .where(_Url.available.is_(False))).scalar_one()


def lock_orders(session: orm.Session, order_ids: abc.Collection[str],
                now: Moment) -> None:
    """Hold the orders' rows for this transaction, whatever their status,
    in one UPDATE (the results of the deliveries of a batch, or one).

    Every writer of an order's events holds it (a status change updates
    the row, a step event locks it first), so a delivery that holds it
    too sees every event committed before, and a writer after it sees the
    delivery's new state. It writes the row (``updated_at``), as
    ``orders.lock_live`` does: on a Galera cluster ``SELECT … FOR
    UPDATE`` locks on one node only, while two writes of one row from
    different nodes conflict, and one of them is retried.
    """
    if order_ids:
        orders = statements.ORDERS
        statements.execute(session, sa.update(orders)
                           .where(orders.c.id.in_(sorted(set(order_ids))))
                           .values(updated_at=now))


def deliveries_of_orders(session: orm.Session,
                         order_ids: abc.Collection[str]
                         ) -> dict[str, dict[str, tuple[str, int, bool]]]:
    """``{order_id: {name: (status, generation, waiting)}}`` of the
    deliveries of ``order_ids``, in one read; an order without any is
    left out. ``waiting``: PENDING, never run nor cast, its first run
    waiting for its retry row (``first_run_delay_seconds``)."""
    found: dict[str, dict[str, tuple[str, int, bool]]] = {}
    if order_ids:
        for order_id, name, status, generation, waiting in session.execute(
                _DELIVERIES, {'order_ids': list(order_ids)}):
            found.setdefault(order_id, {})[name] = (status, generation,
                                                    bool(waiting))
    return found


#: A delivery whose first run waits: never claimed, never cast.
_FIRST_RUN_WAITS = sa.and_(_STEPS.c.status == models.STEP_PENDING,
                           _STEPS.c.attempt == 0,
                           _STEPS.c.dispatched_at.is_(None),
                           _STEPS.c.owner.is_(None))
_DELIVERIES = (sa.select(_STEPS.c.order_id, _STEPS.c.name, _STEPS.c.status,
                         _STEPS.c.generation,
                         sa.case((_FIRST_RUN_WAITS, 1), else_=0))
               .where(_STEPS.c.order_id.in_(sa.bindparam(
                   'order_ids', expanding=True)),
                   models.delivery_steps(_STEPS.c.name)))


def add_events_many(session: orm.Session,
                    events: abc.Mapping[str, abc.Sequence[
                        values.Event]],
                    now: Moment) -> dict[str, list[int]]:
    """Append ``events[order_id]`` to each order's: one read of their last
    sequences, one INSERT; returns ``{order_id: [sequence, ...]}``.

    The caller holds the orders' rows (``lock_orders``, or a status
    change), so no other transaction numbers events of these orders
    meanwhile; the unique (order_id, sequence) makes a mistake an error,
    not a gap.
    """
    last = last_sequences(session, [order_id for order_id, found
                                    in events.items() if found])
    added: list[dict[str, typing.Any]] = []
    sequences: dict[str, list[int]] = {}
    for order_id, found in events.items():
        start = last.get(order_id, 0)
        sequences[order_id] = [start + offset
                               for offset in range(1, len(found) + 1)]
        added.extend(
            dict(event_id=str(uuid.uuid4()), order_id=order_id,
                 sequence=start + offset, event=event.event,
                 status=event.status, step=event.step,
                 detail=event.detail, created_at=now)
            for offset, event in enumerate(found, 1))
    if added:
        statements.execute(session, sa.insert(_EVENTS), added)
    return sequences


def last_sequences(session: orm.Session,
                   order_ids: abc.Collection[str]) -> dict[str, int]:
    """``{order_id: sequence of its last event}`` in one read, through
    the unique (order_id, sequence); an order without events is left out.
    """
    if not order_ids:
        return {}
    return {order_id: sequence for order_id, sequence in session.execute(
        _LAST_SEQUENCES, {'order_ids': list(order_ids)})}


_LAST_SEQUENCES = (sa.select(_EVENTS.c.order_id,
                             sa.func.max(_EVENTS.c.sequence))
                   .where(_EVENTS.c.order_id.in_(
                       sa.bindparam('order_ids', expanding=True)))
                   .group_by(_EVENTS.c.order_id))


def events_after_many(session: orm.Session, after: abc.Mapping[str, int],
                      limit: int) -> dict[str, list[rows.Event]]:
    """``{order_id: its events after after[order_id], in order, up to
    limit}`` (the deliveries a claim took: their runs need no read of
    their own).

    One read per distinct ``after[order_id]`` (a batch of claims holds a
    few: 0 for deliveries that sent nothing yet), each a statement
    compiled once and cached; each order's first ``limit`` are picked by
    ``row_number()``, which SQLite, PostgreSQL and MariaDB all have.
    """
    by_sequence: dict[int, list[str]] = {}
    for order_id, sequence in after.items():
        by_sequence.setdefault(sequence, []).append(order_id)
    found: dict[str, list[rows.Event]] = {order_id: [] for order_id in after}
    for sequence, order_ids in sorted(by_sequence.items()):
        for event in session.scalars(_EVENTS_AFTER, {
                'order_ids': order_ids, 'sequence': sequence,
                'limit': limit}):
            found[event.order_id].append(event)
    return found


_RANKED = (sa.select(_EVENTS.c.id, sa.func.row_number().over(
    partition_by=_EVENTS.c.order_id, order_by=_EVENTS.c.sequence
).label('rank')).where(
    _EVENTS.c.order_id.in_(sa.bindparam('order_ids', expanding=True)),
    _EVENTS.c.sequence > sa.bindparam('sequence')).subquery())
_EVENTS_AFTER = (sa.select(_Event).join(_RANKED, _RANKED.c.id == _Event.id)
                 .where(_RANKED.c.rank <= sa.bindparam('limit'))
                 .order_by(_Event.order_id, _Event.sequence))


def wake_many(session: orm.Session, order_ids: abc.Collection[str],
              now: Moment) -> None:
    """Make every finished delivery of ``order_ids``, and every one whose
    first run waits, PENDING and dispatched at ``now``, in one UPDATE:
    they have new events to send. The caller casts them, and deletes the
    retry rows of those whose first run waited."""
    if order_ids:
        statements.execute(session, _WAKE_ALL, {
            'order_ids': list(order_ids), 'set_dispatched_at': now,
            'set_updated_at': now})


_WAKE_ALL = (sa.update(_STEPS)
             .where(_STEPS.c.order_id.in_(sa.bindparam(
                 'order_ids', expanding=True)),
                 models.delivery_steps(_STEPS.c.name),
                 sa.or_(_STEPS.c.status == models.STEP_DONE,
                        _FIRST_RUN_WAITS))
             .values(statements.setting(_STEPS,
                                        ['dispatched_at', 'updated_at']))
             .values(status=models.STEP_PENDING, finished_at=None))


def paused(session: orm.Session, url_id: int,
           limit: int) -> list[tuple[str, int]]:
    """``[(order_id, generation)]`` of the deliveries waiting for the URL
    to be enabled, up to ``limit``."""
    return [(order_id, generation) for order_id, generation in session.execute(
        sa.select(_Step.order_id, _Step.generation)
        .where(_Step.status == models.STEP_WAITING,
               _Step.name == models.delivery_name(url_id))
        .order_by(_Step.order_id).limit(limit))]


def resume(session: orm.Session, url_id: int,
           order_ids: abc.Collection[str] | None, now: Moment) -> None:
    """Make the URL's waiting deliveries of ``order_ids`` PENDING,
    dispatched at ``now``, their failures counted from 0 again (the
    operator enabled the URL: one more failure must not disable it)."""
    if order_ids:
        statements.execute(session, (
            sa.update(_STEPS)
            .where(_STEPS.c.order_id.in_(list(order_ids)),
                   _STEPS.c.name == models.delivery_name(url_id),
                   _STEPS.c.status == models.STEP_WAITING)
            .values(status=models.STEP_PENDING, dispatched_at=now,
                    failures=0, updated_at=now)))


def count_open_deliveries(session: orm.Session) -> dict[str, int]:
    """``{status: count}`` of the deliveries PENDING (sending, or due to)
    and WAITING (for their URL), read through
    ``ix_order_steps_status_name``."""
    return {status: count for status, count in session.execute(
        sa.select(_Step.status, sa.func.count())
        .where(_Step.status.in_([models.STEP_PENDING,
                                 models.STEP_WAITING]),
               models.delivery_steps(_Step.name))
        .group_by(_Step.status))}


def events_of_order(session: orm.Session,
                    order_id: str) -> list[rows.Event]:
    """Every event of the order, in sequence."""
    return list(session.scalars(
        sa.select(_Event).where(_Event.order_id == order_id)
        .order_by(_Event.sequence)))
