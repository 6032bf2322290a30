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

import uuid

import sqlalchemy as sa

from worker.db import models
from worker.db import statements

_Url = models.NotificationUrl
_Event = models.NotificationEvent
_Step = models.OrderStep
_STEPS = statements.STEPS
_EVENTS = _Event.__table__


def find_url(session, url):
    """The ``NotificationUrl`` of ``url``, or None."""
    return session.scalars(sa.select(_Url).where(
        _Url.url_hash == models.url_hash(url))).one_or_none()


def add_url(session, url, now):
    """Insert ``url``, available; returns its row.

    :raises oslo_db.exception.DBDuplicateEntry: another process added it.
    """
    row = _Url(url=url, url_hash=models.url_hash(url), available=True,
               failures=0, created_at=now, updated_at=now)
    session.add(row)
    session.flush()
    return row


def get_url(session, url_id):
    """The ``NotificationUrl`` with this id, or None."""
    return session.get(_Url, url_id)


def list_urls(session):
    """Every URL, by id."""
    return list(session.scalars(sa.select(_Url).order_by(_Url.id)))


def url_failed(session, url_id, now, error, disable):
    """Count a failed request to the URL; ``disable``: make it unavailable.
    """
    values = dict(failures=_Url.failures + 1, last_error=error,
                  last_failure_at=now, updated_at=now)
    if disable:
        values.update(available=False, disabled_at=sa.func.coalesce(
            _Url.disabled_at, now))
    session.execute(sa.update(_Url).where(_Url.id == url_id).values(values)
                    .execution_options(synchronize_session=False))


def url_succeeded(session, url_id):
    """A request to the URL was acknowledged: its failures start again.

    Writes only if it had failures, so the deliveries of many orders to
    one URL do not all write its row.
    """
    session.execute(sa.update(_Url).where(_Url.id == url_id,
                                          _Url.failures > 0)
                    .values(failures=0)
                    .execution_options(synchronize_session=False))


def hold_url(session, url_id, now):
    """Write the URL's row in this transaction; True if it is available.

    A delivery that stops to wait for its URL holds it until it commits,
    so ``enable_url``, which writes it first, finds that delivery waiting
    once it can go on. A write, not ``SELECT … FOR UPDATE``: on a Galera
    cluster a lock is local to its node, and only two writes of one row
    conflict (at COMMIT, where one of them is refused and retried).
    """
    session.execute(sa.update(_Url).where(_Url.id == url_id)
                    .values(updated_at=now)
                    .execution_options(synchronize_session=False))
    return bool(session.scalar(sa.select(_Url.available)
                               .where(_Url.id == url_id)))


def enable_url(session, url_id, now):
    """Make the URL available again."""
    session.execute(sa.update(_Url).where(_Url.id == url_id)
                    .values(available=True, failures=0, disabled_at=None,
                            updated_at=now)
                    .execution_options(synchronize_session=False))


def count_unavailable_urls(session):
    """How many URLs are unavailable."""
    return session.scalar(sa.select(sa.func.count()).select_from(_Url)
                          .where(_Url.available.is_(False)))


def lock_order(session, order_id, now):
    """Hold the order's row for this transaction, whatever its status.

    Every writer of an order's events holds it (a status change updates
    the row, a step event locks it first), so a delivery that holds it
    too sees every event committed before, and a writer after it sees the
    delivery's new state. It writes the row (``updated_at``), as
    ``orders.lock_live`` does: on a Galera cluster ``SELECT … FOR
    UPDATE`` locks on one node only, while two writes of one row from
    different nodes conflict, and one of them is retried.
    """
    session.execute(sa.update(models.Order)
                    .where(models.Order.id == order_id)
                    .values(updated_at=now)
                    .execution_options(synchronize_session=False))


def deliveries(session, order_id):
    """``{name: (status, generation)}`` of the order's deliveries."""
    return {name: (status, generation) for name, status, generation in
            session.execute(_DELIVERIES, {'order_id': order_id})}


_DELIVERIES = (sa.select(_STEPS.c.name, _STEPS.c.status,
                         _STEPS.c.generation)
               .where(_STEPS.c.order_id == sa.bindparam('order_id'),
                      models.delivery_steps(_STEPS.c.name)))


def add_events(session, order_id, events, now):
    """Append ``events`` to the order's; returns their sequences.

    The caller holds the order's row (``lock_order``, or a status change),
    so no other transaction numbers events of this order meanwhile; the
    unique (order_id, sequence) makes a mistake an error, not a gap.

    :param events: ``worker.notifications.events.Event`` values.
    """
    last = last_sequence(session, order_id)
    rows = [dict(event_id=str(uuid.uuid4()), order_id=order_id,
                 sequence=last + offset, event=event.event,
                 status=event.status, step=event.step, detail=event.detail,
                 created_at=now)
            for offset, event in enumerate(events, 1)]
    if rows:
        statements.execute(session, sa.insert(_EVENTS), rows)
    return [row['sequence'] for row in rows]


def last_sequence(session, order_id):
    """The sequence of the order's last event; 0 if it has none."""
    return session.scalar(
        sa.select(sa.func.coalesce(sa.func.max(_Event.sequence), 0))
        .where(_Event.order_id == order_id)) or 0


def events_after(session, order_id, sequence, limit):
    """The order's events after ``sequence``, in order, up to ``limit``."""
    return list(session.scalars(
        sa.select(_Event).where(_Event.order_id == order_id,
                                _Event.sequence > sequence)
        .order_by(_Event.sequence).limit(limit)))


def wake(session, order_id, names, now):
    """Make the order's finished deliveries ``names`` PENDING again,
    dispatched at ``now``: they have a new event to send."""
    if names:
        statements.execute(session, _WAKE, {
            'where_order_id': order_id, 'names': list(names),
            'set_dispatched_at': now, 'set_updated_at': now})


_WAKE = (sa.update(_STEPS)
         .where(statements.where(_STEPS.c.order_id),
                _STEPS.c.name.in_(sa.bindparam('names', expanding=True)),
                _STEPS.c.status == models.STEP_DONE)
         .values(statements.setting(_STEPS, ['dispatched_at', 'updated_at']))
         .values(status=models.STEP_PENDING, finished_at=None))


def paused(session, url_id, limit):
    """``[(order_id, generation)]`` of the deliveries waiting for the URL
    to be enabled, up to ``limit``."""
    return [tuple(row) for row in session.execute(
        sa.select(_Step.order_id, _Step.generation)
        .where(_Step.status == models.STEP_WAITING,
               _Step.name == models.delivery_name(url_id))
        .order_by(_Step.order_id).limit(limit))]


def resume(session, url_id, order_ids, now):
    """Make the URL's waiting deliveries of ``order_ids`` PENDING,
    dispatched at ``now``, their failures counted from 0 again (the
    operator enabled the URL: one more failure must not disable it)."""
    if order_ids:
        session.execute(
            sa.update(_Step)
            .where(_Step.order_id.in_(list(order_ids)),
                   _Step.name == models.delivery_name(url_id),
                   _Step.status == models.STEP_WAITING)
            .values(status=models.STEP_PENDING, dispatched_at=now,
                    failures=0, updated_at=now)
            .execution_options(synchronize_session=False))


def count_open_deliveries(session):
    """``{status: count}`` of the deliveries PENDING (sending, or due to)
    and WAITING (for their URL), read through
    ``ix_order_steps_status_name``."""
    return {status: count for status, count in session.execute(
        sa.select(_Step.status, sa.func.count())
        .where(_Step.status.in_([models.STEP_PENDING,
                                 models.STEP_WAITING]),
               models.delivery_steps(_Step.name))
        .group_by(_Step.status))}


def events_of_order(session, order_id):
    """Every event of the order, in sequence."""
    return list(session.scalars(
        sa.select(_Event).where(_Event.order_id == order_id)
        .order_by(_Event.sequence)))
