"""Repository of flow control: resource slots, rate starts, and the
steps that wait for them. SQL: Core on ``resource_slots``,
``resource_starts`` and the waiting retry rows; every function takes the
session first, the caller owns the transaction.

A slot is a row ``(key, slot)``, its primary key, held by one run of a
step: ``(order_id, step, generation)``, the run's token. Two claims
cannot hold one slot: the second INSERT finds the row and does nothing
(``ON CONFLICT DO NOTHING`` on PostgreSQL and SQLite, ``INSERT IGNORE`` on
MySQL/MariaDB), which never aborts the claim's transaction. The holder is
deleted by its token (``release``), so a stale run frees nothing that a
newer run of its step holds.

A start of a key with a rate is a row ``(key, slot)`` of
``resource_starts`` whose ``started_at`` is at least a period old: a
conditional UPDATE moves it to now, so no period holds more starts than
the key has rows, across every host.

Which slot to take, and what to do when none is free, is the caller's
(``worker.steps.flow``).
"""

import collections
import collections.abc as abc
import datetime
import typing

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite
from sqlalchemy import orm

from worker.db import models
from worker.db import retry_tasks
from worker.db import statements

Any = typing.Any
Moment = datetime.datetime
#: The run that holds a slot: ``(order_id, step, generation)``, the
#: generation being the run's token.
Holder = tuple[str, str, int]
#: A slot taken: ``(key, slot)``.
Slot = tuple[str, int]

_SLOTS = typing.cast(sa.Table, models.ResourceSlot.__table__)
_STARTS = typing.cast(sa.Table, models.ResourceStart.__table__)
_STEPS = statements.STEPS
_TASKS = statements.RETRY_TASKS
_ORDERS = statements.ORDERS
#: The longest key (``resource_slots.key``).
MAX_KEY_LENGTH = 255
#: When a start row made for a key first was last used: long ago.
NEVER = datetime.datetime(1970, 1, 1)


def held(session: orm.Session,
         keys: abc.Collection[str]) -> dict[str, set[int]]:
    """``{key: {slot, ...}}``: the slots of these keys held now."""
    found: dict[str, set[int]] = {key: set() for key in keys}
    if keys:
        for key, slot in statements.execute(session, sa.select(
                _SLOTS.c.key, _SLOTS.c.slot).where(
                    _SLOTS.c.key.in_(sorted(keys)))):
            found.setdefault(key, set()).add(slot)
    return found


def take(session: orm.Session, key: str, slot: int, holder: Holder,
         now: Moment) -> bool:
    """Take slot ``slot`` of ``key`` for the run ``holder``; False, and
    nothing written, if another run holds it."""
    order_id, step, generation = holder
    return _insert_ignoring_duplicates(session, _SLOTS, dict(
        key=key, slot=slot, order_id=order_id, step=step,
        generation=generation, taken_at=now)) == 1


def give_back(session: orm.Session, slots: abc.Collection[Slot]) -> None:
    """Delete these slots, taken in this transaction (an undo)."""
    if slots:
        statements.execute_many(session, _GIVE_BACK, [
            {'where_key': key, 'where_slot': slot}
            for key, slot in sorted(slots)])


_GIVE_BACK = sa.delete(_SLOTS).where(statements.where(_SLOTS.c.key),
                                     statements.where(_SLOTS.c.slot))


def release(session: orm.Session,
            holders: abc.Collection[Holder]) -> dict[str, int]:
    """Free the slots these runs hold (by their tokens).

    :returns: ``{key: slots freed}``; a run that held none (a stale one:
        its step was taken back and its slots freed then) frees nothing.
    """
    if not holders:
        return {}
    matching = sa.or_(*(sa.and_(_SLOTS.c.order_id == order_id,
                                _SLOTS.c.step == step,
                                _SLOTS.c.generation == generation)
                        for order_id, step, generation in sorted(holders)))
    return _delete_counting(session, matching)


def _delete_counting(session: orm.Session,
                     matching: sa.ColumnElement[bool]) -> dict[str, int]:
    """Delete the slots ``matching``; ``{key: how many}``."""
    slots = list(statements.execute(session, sa.select(
        _SLOTS.c.key, _SLOTS.c.slot).where(matching)))
    if not slots:
        return {}
    # By key and slot, as read: a slot freed and taken again meanwhile by
    # another run is that run's.
    deleted: collections.Counter[str] = collections.Counter()
    for key, slot in slots:
        if statements.execute(session, sa.delete(_SLOTS).where(
                _SLOTS.c.key == key, _SLOTS.c.slot == slot,
                matching)).rowcount:
            deleted[key] += 1
    return dict(deleted)


def orphans(session: orm.Session, limit: int) -> list[Slot]:
    """Up to ``limit`` slots whose holder no longer runs: its step is not
    PENDING with an owner at the holder's generation (cancelled, resumed,
    ended by a write that did not free it, or gone)."""
    return [(key, slot) for key, slot in statements.execute(
        session, sa.select(_SLOTS.c.key, _SLOTS.c.slot)
        .where(_orphaned()).order_by(_SLOTS.c.key, _SLOTS.c.slot)
        .limit(limit))]


def _orphaned() -> sa.ColumnElement[bool]:
    return ~sa.exists().where(
        _STEPS.c.order_id == _SLOTS.c.order_id,
        _STEPS.c.name == _SLOTS.c.step,
        _STEPS.c.generation == _SLOTS.c.generation,
        _STEPS.c.status == models.STEP_PENDING,
        _STEPS.c.owner.is_not(None))


def sweep(session: orm.Session, limit: int) -> dict[str, int]:
    """Free up to ``limit`` slots whose holder no longer runs
    (``orphans``); ``{key: slots freed}``."""
    found = orphans(session, limit)
    if not found:
        return {}
    return _delete_counting(session, sa.and_(sa.or_(*(
        sa.and_(_SLOTS.c.key == key, _SLOTS.c.slot == slot)
        for key, slot in found)), _orphaned()))


def undispatch(session: orm.Session, steps: abc.Collection[Holder],
               now: Moment) -> int:
    """Mark these steps not in flight (``dispatched_at`` NULL): each
    waits for its retry row. Only a PENDING step with no owner still at
    that generation; returns how many."""
    if not steps:
        return 0
    return statements.execute_many(session, _UNDISPATCH, [
        {'where_order_id': order_id, 'where_name': step,
         'where_generation': generation, 'set_updated_at': now}
        for order_id, step, generation in sorted(steps)])


_UNDISPATCH = (sa.update(_STEPS)
               .where(statements.where(_STEPS.c.order_id),
                      statements.where(_STEPS.c.name),
                      statements.where(_STEPS.c.generation),
                      _STEPS.c.status == models.STEP_PENDING,
                      _STEPS.c.owner.is_(None))
               .values(statements.setting(_STEPS, ['updated_at']))
               .values(dispatched_at=None))


def waiting(session: orm.Session, key: str,
            limit: int) -> list[retry_tasks.DueTask]:
    """The ``limit`` oldest retry rows waiting for a slot of ``key``
    (``ix_order_retry_tasks_waiting_for``), not parked, with their
    orders' types (the topic a woken step is cast to)."""
    return [retry_tasks.DueTask(*row) for row in statements.execute(
        session, sa.select(
            _TASKS.c.id, _TASKS.c.order_id, _TASKS.c.retry_task,
            _TASKS.c.retry_at, _TASKS.c.retry_args, _TASKS.c.retry_kwargs,
            _TASKS.c.retry_count, _TASKS.c.priority,
            # The step of a waiting row exists: its order is there.
            sa.true(), _ORDERS.c.type)
        .join(_ORDERS, _ORDERS.c.id == _TASKS.c.order_id)
        .where(_TASKS.c.waiting_for == key, _TASKS.c.parked == sa.false())
        .order_by(_TASKS.c.id).limit(limit))]


def make_due(session: orm.Session, freed: abc.Mapping[str, int],
             now: Moment) -> int:
    """Make the oldest rows waiting for each key freed due at ``now``,
    as many as slots of it were freed; returns how many."""
    ids = [row.id for key, count in sorted(freed.items())
           for row in waiting(session, key, count)]
    if not ids:
        return 0
    return statements.execute(session, sa.update(_TASKS).where(
        _TASKS.c.id.in_(ids)).values(retry_at=now, waiting_for=None)
    ).rowcount


def starts(session: orm.Session, key: str) -> dict[int, Moment]:
    """``{slot: started_at}`` of the start rows of ``key``."""
    return {slot: started_at for slot, started_at in statements.execute(
        session, sa.select(_STARTS.c.slot, _STARTS.c.started_at).where(
            _STARTS.c.key == key))}


def add_starts(session: orm.Session, key: str,
               slots: abc.Collection[int]) -> None:
    """Make the start rows ``slots`` of ``key``, last used ``NEVER``;
    those that exist (made by another host meanwhile) are left alone."""
    for slot in sorted(slots):
        _insert_ignoring_duplicates(session, _STARTS, dict(
            key=key, slot=slot, started_at=NEVER))


def take_start(session: orm.Session, key: str, slot: int, now: Moment,
               free_before: Moment) -> bool:
    """Use start row ``slot`` of ``key`` at ``now`` if it was last used at
    or before ``free_before``; False if another start took it."""
    return statements.execute(session, sa.update(_STARTS).where(
        _STARTS.c.key == key, _STARTS.c.slot == slot,
        _STARTS.c.started_at <= free_before).values(started_at=now)
    ).rowcount == 1


def give_back_start(session: orm.Session, key: str, slot: int,
                    now: Moment, started_at: Moment) -> None:
    """Undo ``take_start`` of this transaction: the row's last use is
    ``started_at`` again."""
    statements.execute(session, sa.update(_STARTS).where(
        _STARTS.c.key == key, _STARTS.c.slot == slot,
        _STARTS.c.started_at == now).values(started_at=started_at))


def _insert_ignoring_duplicates(session: orm.Session, table: sa.Table,
                                row: abc.Mapping[str, Any]) -> int:
    """Insert ``row`` unless its primary key exists; returns the rows
    inserted (0 or 1). A duplicate neither raises nor aborts the
    transaction; a row another transaction inserted and has not committed
    makes this one wait for its outcome."""
    dialect = session.get_bind().dialect.name
    statement: sa.Insert
    if dialect == 'postgresql':
        statement = postgresql.insert(table).on_conflict_do_nothing()
    elif dialect == 'sqlite':
        statement = sqlite.insert(table).on_conflict_do_nothing()
    else:
        statement = sa.insert(table).prefix_with('IGNORE')
    return statements.execute(session, statement, row).rowcount
