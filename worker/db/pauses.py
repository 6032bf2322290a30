"""Repository of pauses (``pauses``): what an operator paused, one row per
``(target, name)``. Every function takes the session first; the caller
owns the transaction.

The claim's reads are ``any_paused`` (one probe, made at most once per
``[worker] pause_refresh_seconds`` while nothing is paused) and
``matching`` (the pauses that may hold the steps of a batch: every pause
but those of orders, and those of the batch's orders). The writes take
lists, so that pausing many orders by id is one statement.

A step a pause holds waits on a retry row whose ``waiting_for`` is
``waiting_key(pause)``; ``worker.db.resources.waiting`` reads those rows
as it reads the rows waiting for a slot.
"""

import collections.abc as abc
import datetime
import typing

import sqlalchemy as sa
from sqlalchemy import orm

from worker.db import models
from worker.db import statements

_TABLE = typing.cast(sa.Table, models.Pause.__table__)
#: The prefix of the ``waiting_for`` of a step a pause holds: reserved,
#: a resource key may not use it (``worker.steps.flow.RESERVED``).
PREFIX = 'pause'


class Pause(typing.NamedTuple):
    """A pause as read."""

    id: int
    target: str
    name: str
    reason: str | None
    project_id: str | None
    created_at: datetime.datetime


def waiting_key(pause_id: int) -> str:
    """The ``waiting_for`` of the retry rows of the steps it holds."""
    return '%s:%d' % (PREFIX, pause_id)


def pause_id_of(waiting_for: str | None) -> int | None:
    """The pause a ``waiting_for`` names, or None if it names a key."""
    prefix, _, number = (waiting_for or '').partition(':')
    if prefix != PREFIX or not number.isdigit():
        return None
    return int(number)


_COLUMNS = (_TABLE.c.id, _TABLE.c.target, _TABLE.c.name, _TABLE.c.reason,
            _TABLE.c.project_id, _TABLE.c.created_at)


def any_paused(session: orm.Session) -> bool:
    """Whether anything is paused."""
    return statements.execute(session, _ANY).first() is not None


_ANY = sa.select(_TABLE.c.id).limit(1)


def matching(session: orm.Session,
             order_ids: abc.Collection[str]) -> list[Pause]:
    """The pauses that may hold steps of these orders: every pause but
    those of orders, and the pauses of these orders."""
    return [Pause(*row) for row in statements.execute(session, sa.select(
        *_COLUMNS).where(sa.or_(
            _TABLE.c.target != 'order',
            _TABLE.c.name.in_(sorted(order_ids)))).order_by(_TABLE.c.id))]


def listed(session: orm.Session, target: str | None = None,
           names: abc.Collection[str] | None = None) -> list[Pause]:
    """The pauses, oldest first; only those of ``target`` and, if given,
    of these ``names``."""
    query = sa.select(*_COLUMNS).order_by(_TABLE.c.id)
    if target is not None:
        query = query.where(_TABLE.c.target == target)
    if names is not None:
        query = query.where(_TABLE.c.name.in_(sorted(names)))
    return [Pause(*row) for row in statements.execute(session, query)]


def add_many(session: orm.Session, target: str, names: abc.Collection[str],
             reason: str | None, now: datetime.datetime,
             project_ids: abc.Mapping[str, str | None] | None = None
             ) -> list[str]:
    """Pause each of ``names`` of ``target`` not paused yet; returns the
    names paused now (one INSERT of them all).

    :param project_ids: ``{name: project_id}`` of paused orders.
    """
    if not names:
        return []
    present = {pause.name for pause in listed(session, target, names)}
    new = sorted(set(names) - present)
    if new:
        statements.execute(session, sa.insert(_TABLE), [dict(
            target=target, name=name, reason=reason,
            project_id=(project_ids or {}).get(name), created_at=now)
            for name in new])
    return new


def remove_many(session: orm.Session, target: str,
                names: abc.Collection[str]) -> list[Pause]:
    """Lift the pauses of ``names`` of ``target``; returns those lifted
    (their ids name the steps they held)."""
    found = listed(session, target, names)
    if found:
        statements.execute(session, sa.delete(_TABLE).where(
            _TABLE.c.id.in_([pause.id for pause in found])))
    return found


def census(session: orm.Session, before: datetime.datetime
           ) -> dict[str, tuple[int, int]]:
    """``{target: (paused, paused before before)}`` of the targets with a
    pause: one GROUP BY of the table."""
    old = sa.func.sum(sa.case((_TABLE.c.created_at < before, 1), else_=0))
    return {target: (count, int(older or 0)) for target, count, older in
            statements.execute(session, sa.select(
                _TABLE.c.target, sa.func.count(), old)
                .group_by(_TABLE.c.target))}
