"""Repository of order steps. SQL: Core on the ``order_steps`` table
for every write, fenced on the generation: statements built once with
their values as parameters, a batch in one execution
(``statements.execute_many``, ``update_many``), or one UPDATE for a group
of steps by name and generation (``_in_groups``); the recovery reads as
column tuples (``RecoveryRow``); the ORM only for ``for_order``, whose
steps callers read as objects. Every function takes the session first.

Writes made on behalf of a dispatch are conditional on the step's
``generation`` (its fencing token): they return False, and change nothing,
when the step has moved on since the dispatch was made.

Over 400 lines, and one module all the same: it is one aggregate (one
table, one protocol, ``interfaces.Steps``), and its writes share one
fencing (``_fenced_statement``, ``_RELEASED``), the recovery's
``take_back`` among them. The recovery reads alone (about 80 lines) would
leave this module over 400 and make a seventh repository of the same rows;
with ``take_back`` they would take the fencing with them.
"""

import collections.abc as abc
import datetime
import functools
import typing

import sqlalchemy as sa
from sqlalchemy import orm

from worker.db import models
from worker.db import rows
from worker.db import statements

Any = typing.Any
Moment = datetime.datetime
#: ``(order_id, step)``.
Key = tuple[str, str]
#: ``claim_many``'s claims: ``(order_id, step, generation, lease_until)``.
Claim = tuple[str, str, int, Moment]
#: ``retry_many``'s: ``(order_id, step, token, failures, polls,
#: last_error)``.
Retry = tuple[str, str, int, int, int, str | None]
#: ``finish_many``'s: ``(order_id, step, token, status, output,
#: last_error)``.
Finish = tuple[str, str, int, str, rows.JSON | None, str | None]
#: ``release_many``'s: ``(order_id, step, token, attempt, started_at)``,
#: the last two as they were before the claim of ``token``.
Release = tuple[str, str, int, int, Moment | None]
#: ``start_many``'s: ``(order_id, steps, dispatched)``.
Start = tuple[str, abc.Iterable[str] | None, bool]
#: ``record_delivery_many``'s: ``(order_id, step, token, status,
#: delivered, failures, last_error, dispatched)``.
Delivery = tuple[str, str, int, str, int, int, str | None, bool]

_Step = models.OrderStep
_TABLE = statements.STEPS
_TASKS = statements.RETRY_TASKS


class RecoveryRow(typing.NamedTuple):
    """A step the retry scheduler may take back, as it read it."""

    order_id: str
    step: str
    generation: int
    failures: int
    owner: str | None
    #: Times the processes running it died (``models.OrderStep.crashes``).
    crashes: int
    #: When its run was claimed, and its ``attempt`` then: the run's row
    #: in the history if it is taken back.
    claimed_at: Moment | None
    attempt: int


def create(session: orm.Session, order_id: str, names: abc.Iterable[str],
           roots: abc.Container[str], now: Moment,
           dispatched: bool = True) -> None:
    """Insert the steps ``names`` of a new order.

    The ``roots`` are PENDING and count as dispatched at ``now`` (the
    caller casts them after the commit); the others are WAITING.

    :param dispatched: False for roots that are not cast now (an order
        that starts later): their ``dispatched_at`` is NULL, so the
        recovery never takes them for lost dispatches; the caller gives
        each a retry row.
    """
    dispatched_at = now if dispatched else None
    statements.execute(session, _INSERT, [
        dict(order_id=order_id, name=name,
             status=(models.STEP_PENDING if name in roots
                     else models.STEP_WAITING),
             generation=0, attempt=0, failures=0, polls=0, crashes=0,
             dispatched_at=dispatched_at if name in roots else None,
             updated_at=now)
        for name in names])


_INSERT = sa.insert(_TABLE)


def for_order(session: orm.Session, order_id: str) -> dict[str, rows.Step]:
    """Return ``{name: step}`` of one order (``{}`` if it has none)."""
    # Ordered by name, so that readers list the steps the same way on every
    # database; callers that know the workflow order by its declaration.
    return {step.name: step for step in session.scalars(
        sa.select(_Step).where(_Step.order_id == order_id)
        .order_by(_Step.name))}


@functools.lru_cache(maxsize=None)
def _fenced_statement(names: tuple[str, ...]) -> sa.Update:
    """The UPDATE of ``_fenced_update`` that sets the columns ``names``."""
    return (sa.update(_TABLE)
            .where(statements.where(_TABLE.c.order_id),
                   statements.where(_TABLE.c.name),
                   statements.where(_TABLE.c.generation),
                   _TABLE.c.status == models.STEP_PENDING)
            .values(statements.setting(_TABLE, names)))


def _fenced_update(session: orm.Session, order_id: str, step: str,
                   token: int, now: Moment, **values: Any) -> bool:
    """Update a PENDING step only if its generation is still ``token``.

    The statement is built once for each set of columns set to plain
    values; those set to SQL expressions are added to it.
    """
    expressions = {column: value for column, value in values.items()
                   if isinstance(value, sa.ColumnElement)}
    plain = {column: value for column, value in values.items()
             if column not in expressions}

    def statement_of(columns: tuple[str, ...]) -> sa.Update:
        return _fenced_statement(columns).values(expressions)
    return statements.update_many(
        session, statement_of if expressions else _fenced_statement,
        [(plain, _where(order_id, step, token))], now) == 1


def _fenced_updates(
        session: orm.Session,
        updates: abc.Iterable[tuple[str, str, int, abc.Mapping[str, Any]]],
        now: Moment) -> int:
    """Fenced updates of several steps to plain values.

    :param updates: ``[(order_id, step, token, values), ...]``.
    :returns: how many steps were updated; the others had moved on.

    One execution per set of columns set, with the parameters of all its
    steps: the statement's set-up is paid once, not once a step.
    """
    return statements.update_many(session, _fenced_statement, [
        (values, _where(order_id, step, token))
        for order_id, step, token, values in updates], now)


def _where(order_id: str, step: str, token: int) -> dict[str, Any]:
    """The parameters of ``_fenced_statement``'s WHERE clause."""
    return {'where_order_id': order_id, 'where_name': step,
            'where_generation': token}


def _claimed(now: Moment | sa.BindParameter[Moment],
             owner: str | sa.BindParameter[str],
             lease_until: Moment | sa.BindParameter[Moment]
             ) -> dict[str, Any]:
    """What a claim sets: the next generation, its owner and lease."""
    return dict(generation=_TABLE.c.generation + 1, owner=owner,
                claimed_at=now, lease_expires_at=lease_until,
                dispatched_at=None, attempt=_TABLE.c.attempt + 1,
                started_at=sa.func.coalesce(_TABLE.c.started_at, now),
                updated_at=now)


#: One claim's UPDATE, built once: the claim's values are parameters.
_CLAIM = (sa.update(_TABLE)
          .where(statements.where(_TABLE.c.order_id),
                 statements.where(_TABLE.c.name),
                 statements.where(_TABLE.c.generation),
                 _TABLE.c.status == models.STEP_PENDING)
          .values(_claimed(
              sa.bindparam('now', type_=_TABLE.c.claimed_at.type),
              sa.bindparam('owner', type_=_TABLE.c.owner.type),
              sa.bindparam('lease_until',
                           type_=_TABLE.c.lease_expires_at.type))))


def _claim_parameters(order_id: str, step: str, generation: int,
                      now: Moment, owner: str,
                      lease_until: Moment) -> dict[str, Any]:
    return {'where_order_id': order_id, 'where_name': step,
            'where_generation': generation, 'now': now, 'owner': owner,
            'lease_until': lease_until}


def claim_many(session: orm.Session, claims: abc.Collection[Claim],
               now: Moment, owner: str) -> set[Key]:
    """Claim steps (one or several) at once, each for one run, by moving
    its generation forward.

    Each succeeds for exactly one of any number of concurrent callers
    holding the same token; the winner's new token is ``generation + 1``,
    and the step records ``owner`` until its result is written or its
    ``lease_until`` passes.

    :param claims: ``[(order_id, step, generation, lease_until), ...]``,
        each step at most once.
    :returns: the ``(order_id, step)`` of the steps claimed; the others
        had moved on.

    Where the database takes a batch in one execution (PostgreSQL,
    MariaDB, ``statements.execute_many``), ``_CLAIM`` with every
    step's parameters. Elsewhere (SQLite) one UPDATE per distinct lease,
    for the steps in ``_in_groups``. When fewer rows moved than asked
    (another process was quicker for some), one read tells which moved
    for this claim: those at ``generation + 1`` with ``owner`` and
    ``claimed_at == now``. UPDATE ... RETURNING would save that read, but
    MariaDB has no such statement. The caller makes ``now`` unique among
    its own claims, so that its claims cannot be told apart only by time.
    """
    claim_all = (_claim_at_once if statements.executes_many_at_once(session)
                 else _claim_by_lease)
    moved = claim_all(session, claims, now, owner)
    asked = {(order_id, step): generation
             for order_id, step, generation, _ in claims}
    if moved == len(asked):
        return set(asked)
    moved_rows = statements.execute(session, (
        sa.select(_TABLE.c.order_id, _TABLE.c.name, _TABLE.c.generation)
        .where(_TABLE.c.order_id.in_(list({key[0] for key in asked})),
               sa.tuple_(_TABLE.c.order_id, _TABLE.c.name).in_(list(asked)),
               _TABLE.c.owner == owner, _TABLE.c.claimed_at == now)))
    return {(order_id, step) for order_id, step, generation in moved_rows
            if asked.get((order_id, step)) == generation - 1}


def _claim_at_once(session: orm.Session, claims: abc.Iterable[Claim],
                   now: Moment, owner: str) -> int:
    """``claim_many``'s UPDATE, once over every claim's parameters; returns
    the rows moved.

    In key order: two processes given the same steps (a duplicate
    message) lock them in the same order, and neither waits on the other
    for a row it holds.
    """
    return statements.execute_many(session, _CLAIM, [
        _claim_parameters(order_id, step, generation, now, owner,
                          lease_until)
        for order_id, step, generation, lease_until in sorted(claims)])


def _claim_by_lease(session: orm.Session, claims: abc.Iterable[Claim],
                    now: Moment, owner: str) -> int:
    """``claim_many``'s UPDATEs, one per lease; returns the rows moved."""
    by_lease: dict[Moment, dict[tuple[str, int], set[str]]] = {}
    for order_id, step, generation, lease_until in claims:
        by_lease.setdefault(lease_until, {}).setdefault(
            (step, generation), set()).add(order_id)
    moved = 0
    for lease_until, groups in by_lease.items():
        moved += statements.execute(session, (
            sa.update(_TABLE)
            .where(_in_groups((_TABLE.c.name, _TABLE.c.generation), groups),
                   _TABLE.c.status == models.STEP_PENDING)
            .values(_claimed(now, owner, lease_until)))).rowcount
    return moved


def extend_lease(session: orm.Session, order_id: str, step: str,
                 token: int, owner: str, now: Moment,
                 lease_until: Moment) -> bool:
    """Move the lease of a running step to ``lease_until``, if the run
    of ``token`` by ``owner`` still holds it.

    False once the step was taken back (a new generation), ended, or
    released by the run's own result (no owner).
    """
    return statements.execute(session, (
        sa.update(_TABLE)
        .where(_TABLE.c.order_id == order_id, _TABLE.c.name == step,
               _TABLE.c.generation == token, _TABLE.c.owner == owner,
               _TABLE.c.status == models.STEP_PENDING)
        .values(lease_expires_at=lease_until, updated_at=now))
    ).rowcount == 1


# A run's result releases the step: no owner, not in flight.
_RELEASED: dict[str, None] = {'owner': None, 'claimed_at': None,
                              'lease_expires_at': None,
                              'dispatched_at': None}
# A run that retried or finished its step ran to its end: the crashes
# counted before (``take_back``) are behind the step, which ``[worker]
# max_step_crashes`` fails only when its processes died that many times
# in a row.
_ENDED: dict[str, Any] = dict(_RELEASED, crashes=0)


def retry_many(session: orm.Session, retries: abc.Iterable[Retry],
               now: Moment) -> int:
    """Release steps for a later run (their retry rows are the caller's).

    :param retries: ``[(order_id, step, token, failures, polls,
        last_error), ...]``.
    :returns: how many were released; the others had moved on.
    """
    return _fenced_updates(session, [
        (order_id, step, token, dict(failures=failures, polls=polls,
                                     last_error=last_error, **_ENDED))
        for order_id, step, token, failures, polls, last_error in retries],
        now)


def finish_many(session: orm.Session, finishes: abc.Iterable[Finish],
                now: Moment) -> int:
    """End steps DONE (with their ``output``) or FAILED.

    :param finishes: ``[(order_id, step, token, status, output,
        last_error), ...]``; ``output`` and ``last_error`` may be None
        (left as they are).
    :returns: how many were ended; the others had moved on.
    """
    updates = []
    for order_id, step, token, status, output, last_error in finishes:
        # A step that failed keeps its crashes: a poison step's tell why.
        values: dict[str, Any] = dict(
            status=status, finished_at=now,
            **(_ENDED if status == models.STEP_DONE else _RELEASED))
        if output is not None:
            values['output'] = output
        if last_error is not None:
            values['last_error'] = last_error
        updates.append((order_id, step, token, values))
    return _fenced_updates(session, updates, now)


def release_many(session: orm.Session, releases: abc.Iterable[Release],
                 now: Moment) -> int:
    """Give back steps claimed and never run (their worker stops), as if
    their claims had not been made: PENDING at the claim's token, with no
    owner nor lease, their ``attempt`` and ``started_at`` as before, no
    failure nor crash counted; and cast at ``now`` (the caller casts them
    after the commit: a message of ``token`` claims each again; a cast
    lost is a lost dispatch, which the recovery finds).

    :param releases: ``[(order_id, step, token, attempt, started_at),
        ...]``.
    :returns: how many were given back; the others had moved on.
    """
    return _fenced_updates(session, [
        (order_id, step, token, dict(_RELEASED, dispatched_at=now,
                                     attempt=attempt, started_at=started_at))
        for order_id, step, token, attempt, started_at in releases], now)


def start_many(session: orm.Session, starts: abc.Iterable[Start],
               now: Moment) -> None:
    """Make WAITING steps of orders PENDING; ``dispatched``: cast at
    ``now``.

    :param starts: ``[(order_id, names, dispatched), ...]``.
    """
    parameters = [{'where_order_id': order_id, 'where_name': step,
                   'set_updated_at': now,
                   'set_dispatched_at': now if dispatched else None}
                  for order_id, names, dispatched in starts
                  for step in names or ()]
    if parameters:
        statements.execute_many(session, _START, parameters)


_START = (sa.update(_TABLE)
          .where(statements.where(_TABLE.c.order_id),
                 statements.where(_TABLE.c.name),
                 _TABLE.c.status == models.STEP_WAITING)
          .values(statements.setting(_TABLE,
                                     ['updated_at', 'dispatched_at']))
          .values(status=models.STEP_PENDING))


def revoke_open(session: orm.Session, order_id: str, now: Moment,
                reason: str) -> list[str]:
    """Cancel every WAITING or PENDING step of the order's workflow.

    Its deliveries (``notify:*``) go on: they notify the order's end.

    Their generation moves forward too, so a run still going elsewhere
    finds its token stale and its result has no effect. Returns the names
    of the steps cancelled.
    """
    open_steps = list(statements.execute(session, (
        sa.select(_TABLE.c.name).where(
            _TABLE.c.order_id == order_id,
            _TABLE.c.status.in_([models.STEP_WAITING, models.STEP_PENDING]),
            ~models.delivery_steps(_TABLE.c.name)))).scalars())
    if open_steps:
        statements.execute(session, (
            sa.update(_TABLE)
            .where(_TABLE.c.order_id == order_id,
                   _TABLE.c.name.in_(open_steps),
                   _TABLE.c.status.in_([models.STEP_WAITING,
                                        models.STEP_PENDING]))
            .values(generation=_TABLE.c.generation + 1,
                    status=models.STEP_CANCELLED, last_error=reason,
                    finished_at=now, updated_at=now, **_RELEASED)))
    return open_steps


def restart(session: orm.Session, order_id: str,
            start: abc.Collection[str], wait: abc.Collection[str],
            now: Moment) -> dict[str, int]:
    """Make steps of a resumed order run again from scratch.

    ``start`` become PENDING and count as dispatched at ``now`` (the
    caller casts them after the commit), ``wait`` become WAITING. Both
    lose what their runs left (attempts, failures, polls, crashes, error,
    times, output) and move their generation forward, so that any
    message, retry row or run of the old generation has no effect. A DONE
    step is never touched.

    :returns: ``{name: generation}`` of the steps restarted, the new
        generation each is cast with.
    """
    names = sorted(set(start) | set(wait))
    if not names:
        return {}
    for status, group in ((models.STEP_PENDING, start),
                          (models.STEP_WAITING, wait)):
        if group:
            statements.execute(session, (
                sa.update(_TABLE)
                .where(_TABLE.c.order_id == order_id,
                       _TABLE.c.name.in_(sorted(group)),
                       _TABLE.c.status != models.STEP_DONE)
                .values(generation=_TABLE.c.generation + 1, status=status,
                        dispatched_at=(now if status == models.STEP_PENDING
                                       else None),
                        updated_at=now, **_RESTARTED)))
    return {name: generation for name, generation in statements.execute(
        session, sa.select(_TABLE.c.name, _TABLE.c.generation).where(
            _TABLE.c.order_id == order_id, _TABLE.c.name.in_(names),
            _TABLE.c.status != models.STEP_DONE))}


# What a restarted step keeps of its runs: nothing.
_RESTARTED: dict[str, Any] = dict(
    attempt=0, failures=0, polls=0, crashes=0, last_error=None,
    started_at=None, finished_at=None, output=None, owner=None,
    claimed_at=None, lease_expires_at=None)


def record_delivery_many(session: orm.Session,
                         deliveries: abc.Iterable[Delivery],
                         now: Moment) -> int:
    """Write the runs of deliveries (``worker.steps.delivery``), one
    execution per set of columns; how many were still at their token.

    :param deliveries: ``[(order_id, step, token, status, delivered,
        failures, last_error, dispatched), ...]``. ``status``: PENDING
        (more to send: cast again now if ``dispatched``, else at its
        retry row), DONE (every event sent so far acknowledged) or
        WAITING (its URL is unavailable); ``delivered``: the sequence of
        the last event acknowledged.
    """
    updates = []
    for (order_id, step, token, status, delivered, failures, last_error,
         dispatched) in deliveries:
        values: dict[str, Any] = dict(
            status=status, failures=failures, last_error=last_error,
            output={'delivered_sequence': delivered}, **_RELEASED)
        if dispatched:
            values['dispatched_at'] = now
        if status == models.STEP_DONE:
            values['finished_at'] = now
        updates.append((order_id, step, token, values))
    return _fenced_updates(session, updates, now)


def add(session: orm.Session, order_id: str, step: str, now: Moment) -> None:
    """Insert one more step, PENDING and dispatched at ``now``.

    For a compensation step, which exists only once an order is
    cancelled.
    """
    create(session, order_id, [step], {step}, now)


def mark_dispatched(session: orm.Session, keys: abc.Collection[Key],
                    now: Moment) -> None:
    """Record that these steps (``(order_id, step)``) were cast at ``now``.

    Steps already claimed by a worker (it was quicker than this write)
    are left alone.
    """
    if not keys:
        return
    orders_by_step: dict[tuple[str], set[str]] = {}
    for order_id, step in keys:
        orders_by_step.setdefault((step,), set()).add(order_id)
    statements.execute(session, sa.update(_TABLE).where(
        _in_groups((_TABLE.c.name,), orders_by_step),
        _TABLE.c.owner.is_(None),
        _TABLE.c.status == models.STEP_PENDING).values(dispatched_at=now))


def _in_groups(columns: tuple[sa.Column[Any], ...],
               groups: abc.Mapping[tuple[Any, ...], abc.Collection[str]]
               ) -> sa.ColumnElement[bool]:
    """Steps whose ``columns`` hold one key of ``groups`` and whose order
    is among that key's orders.

    :param groups: ``{(value of each column, ...): {order_id, ...}}``.

    A batch of steps shares few names (and generations): "name = n AND
    order_id IN (...)" per key is a set of primary-key probes on every
    database, where PostgreSQL compares a row with an IN list of tuples
    tuple by tuple (40 % of a dispatch pass's time, 50 pairs a step).
    """
    return sa.or_(*(
        sa.and_(*(column == value for column, value in zip(columns, key)),
                _TABLE.c.order_id.in_(sorted(order_ids)))
        for key, order_ids in sorted(groups.items())))


def _without_retry_row() -> sa.ColumnElement[bool]:
    return ~sa.exists().where(_TASKS.c.order_id == _TABLE.c.order_id,
                              _TASKS.c.retry_task == _TABLE.c.name)


#: The SELECT of a ``RecoveryRow``'s columns, its WHERE to add.
_RECOVERY = sa.select(_TABLE.c.order_id, _TABLE.c.name, _TABLE.c.generation,
                      _TABLE.c.failures, _TABLE.c.owner, _TABLE.c.crashes,
                      _TABLE.c.claimed_at, _TABLE.c.attempt)


def _recovery(session: orm.Session,
              query: sa.Select[typing.Unpack[tuple[Any, ...]]]
              ) -> list[RecoveryRow]:
    return [RecoveryRow(*row) for row in statements.execute(session, query)]


def lost_dispatches(session: orm.Session, dispatched_before: Moment,
                    limit: int) -> list[RecoveryRow]:
    """Steps cast before ``dispatched_before`` that no worker took up.

    Reads ``ix_order_steps_dispatched_at``: only steps in flight are
    visited (a claim and every result clear ``dispatched_at``).
    """
    found = _recovery(session, (
        _RECOVERY
        .where(_TABLE.c.dispatched_at < dispatched_before,
               _without_retry_row())
        .order_by(_TABLE.c.dispatched_at)
        .limit(limit)))
    return [row for row in found if row.owner is None]


def owners(session: orm.Session) -> set[str]:
    """Return the distinct owners of claimed steps (``ix_order_steps_owner``).
    """
    return set(statements.execute(session, (
        sa.select(_TABLE.c.owner).distinct()
        .where(_TABLE.c.owner.is_not(None)))).scalars())


def owned_by(session: orm.Session, dead_owners: abc.Collection[str],
             limit: int) -> list[RecoveryRow]:
    """Steps claimed by one of ``dead_owners``."""
    if not dead_owners:
        return []
    return _recovery(session, (
        _RECOVERY
        .where(_TABLE.c.owner.in_(list(dead_owners)), _without_retry_row())
        .limit(limit)))


def expired_leases(session: orm.Session, ended_before: Moment,
                   limit: int) -> list[RecoveryRow]:
    """Claimed steps whose lease ended before ``ended_before``, owner
    alive or not.

    Reads ``ix_order_steps_lease_expires_at``: only running steps have a
    lease.
    """
    return _recovery(session, (
        _RECOVERY
        .where(_TABLE.c.lease_expires_at < ended_before)
        .order_by(_TABLE.c.lease_expires_at)
        .limit(limit)))


def take_back(session: orm.Session, order_id: str, step: str,
              generation: int, now: Moment,
              failed: str | None = None, crashed: bool = False) -> bool:
    """Take a lost step back for re-dispatch: bump its token, no owner.

    The old token is now stale, so a late message or a zombie owner that
    still holds it has no effect. With ``failed`` (a lease that ended),
    the run counts as a failure with that error; with ``crashed`` (its
    owner died), as a crash. Returns False if the step moved on.
    """
    values: dict[str, Any] = dict(generation=generation + 1, **_RELEASED)
    if failed:
        values.update(failures=_TABLE.c.failures + 1, last_error=failed)
    if crashed:
        values.update(crashes=_TABLE.c.crashes + 1)
    return _fenced_update(session, order_id, step, generation, now,
                          **values)
