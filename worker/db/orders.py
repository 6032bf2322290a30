"""Repository of orders. SQL: the ORM to create an order (an ORM object
returned) and for the operators' reads (``get``, ``list_orders``); Core
for the hot path: a claim's read as named tuples (``with_steps_many``),
the status moves as UPDATEs built once and run in one execution per set
of columns (``statements.update_many``), counts as grouped SELECTs. Every
function takes the session first.

An order's status changes are conditional on the status they start from:
they return False, and change nothing, when the order has moved on. The
fencing of the work itself is per step (``worker.db.steps``).

Over 400 lines, and one module all the same: one table, whose status
moves share one conditional UPDATE (``_move_statement``) between the
worker's moves and the API's (``cancel``, ``resume``: the latter's
signatures in ``worker.db.queries``); splitting the API's reads off would
give one table two repositories for 20 lines saved.
"""

import collections.abc as abc
import dataclasses
import datetime
import functools
import typing
import uuid

import sqlalchemy as sa
from sqlalchemy import orm

from worker.db import meta_search
from worker.db import models
from worker.db import rows
from worker.db import statements
from worker.db import steps
from worker.order_types import base as order_types

Any = typing.Any
Moment = datetime.datetime
#: An order and its steps by name.
WithSteps = tuple[rows.Order, dict[str, rows.Step]]

_TABLE = statements.ORDERS


@dataclasses.dataclass(frozen=True)
class Origin:
    """Where an order comes from: the project that owns it, the key its
    caller made it idempotent by, and the request that created it."""

    project_id: str = models.DEFAULT_PROJECT
    idempotency_key: str | None = None
    #: ``worker.api``'s fingerprint of the request, kept with the key.
    request_hash: str | None = None
    request_id: str | None = None
    global_request_id: str | None = None
    #: The schedule whose tick it is (``worker.db.schedules``), if any.
    schedule_id: str | None = None
    #: The W3C carrier of the span of its creation (``worker.tracing``),
    #: which a step run later joins; None with tracing off.
    trace_context: dict[str, str] | None = None


#: The origin of an order that says nothing of its own.
NO_ORIGIN = Origin()


def create(session: orm.Session, workflow: order_types.Workflow,
           meta: abc.Mapping[str, Any] | None, now: Moment,
           priority: int = 0, origin: Origin = NO_ORIGIN,
           not_before: Moment | None = None) -> rows.Order:
    """Insert a PENDING order of ``workflow``'s type, and its steps.

    Its first steps (those that come after none) count as dispatched at
    ``now``: the caller casts them after the commit, and the retry
    scheduler dispatches them again if no worker has taken them up within
    ``[scheduler] dispatch_deadline_seconds`` (a failed or lost cast).

    :param not_before: when the order starts, later than ``now``; or None
        for at once. Its first steps are then PENDING and not dispatched:
        the caller gives each a retry row due at that time.

    :param priority: ``models.MIN_PRIORITY`` to ``models.MAX_PRIORITY``;
        when more retry rows are due than a pass casts, those of orders of
        a higher priority go first.
    :raises ValueError: ``priority`` is not a priority.
    :raises oslo_db.exception.DBDuplicateEntry: the origin's project has
        an order with its idempotency key (the transaction must be rolled
        back).
    """
    order = models.Order(
        id=str(uuid.uuid4()), type=workflow.type_name,
        status=models.PENDING, meta=dict(meta or {}),
        priority=models.check_priority(priority), created_at=now,
        updated_at=now, not_before=not_before,
        workflow_version=workflow.version, **dataclasses.asdict(origin))
    session.add(order)
    session.flush()
    steps.create(session, order.id, workflow.names, set(workflow.roots()),
                 now, dispatched=not_before is None)
    return order


def get(session: orm.Session, order_id: str) -> rows.Order | None:
    """Return the order with this id, or None."""
    return session.get(models.Order, order_id)


def find_by_key(session: orm.Session, project_id: str,
                idempotency_key: str) -> rows.Order | None:
    """Return the project's order created with ``idempotency_key``, or
    None."""
    return session.scalars(sa.select(models.Order).where(
        models.Order.project_id == project_id,
        models.Order.idempotency_key == idempotency_key)).first()


def status_of(session: orm.Session, order_id: str) -> str | None:
    """Return the order's status, or None if there is no such order: one
    probe of the primary key, for those who wait for an order."""
    return session.scalar(sa.select(models.Order.status).where(
        models.Order.id == order_id))


def ids_starting_with(session: orm.Session, prefix: str,
                      project_id: str | None = None,
                      limit: int = 2) -> list[str]:
    """Return up to ``limit`` ids of orders that start with ``prefix``
    (of ``project_id``'s orders only, unless None)."""
    query = (sa.select(models.Order.id)
             .where(models.Order.id.startswith(prefix, autoescape=True))
             .order_by(models.Order.id).limit(limit))
    if project_id is not None:
        query = query.where(models.Order.project_id == project_id)
    return list(session.scalars(query))


def with_steps_many(session: orm.Session, order_ids: abc.Collection[str]
                    ) -> dict[str, WithSteps]:
    """Return ``{order_id: (order, {name: step})}`` in one query, for those
    of ``order_ids`` that exist.

    The order and its steps are read-only rows (named tuples with the
    columns as attributes), not ORM objects: this is every claim's read,
    and building, identity-mapping and tracking ORM objects was most of
    its cost.
    """
    found: dict[str, WithSteps] = {}
    if not order_ids:
        return found
    width = len(_TABLE.c)
    for row in statements.execute(session, _WITH_STEPS,
                                  {'order_ids': list(order_ids)}):
        order_id = row[0]
        if order_id not in found:
            found[order_id] = (_order_row(row[:width]), {})
        if row[width] is not None:
            step = _step_row(row[width:])
            found[order_id][1][step.name] = step
    return found


#: An order and a step as ``with_steps_many`` reads them: named tuples of
#: their columns, read-only.
_order_row: abc.Callable[[abc.Iterable[Any]], rows.Order] = (
    statements.named_rows('OrderRow', _TABLE))
_step_row: abc.Callable[[abc.Iterable[Any]], rows.Step] = (
    statements.named_rows('StepRow', statements.STEPS))

_WITH_STEPS = (
    sa.select(*_TABLE.c, *statements.STEPS.c)
    .select_from(_TABLE.outerjoin(
        statements.STEPS, statements.STEPS.c.order_id == _TABLE.c.id))
    .where(_TABLE.c.id.in_(sa.bindparam('order_ids', expanding=True)))
    .order_by(_TABLE.c.id, statements.STEPS.c.name))


class RetryOrigin(typing.NamedTuple):
    """What a retry row of an order takes from it: its priority and the
    request ids its casts carry (``rpcapi.retry_arguments``)."""

    priority: int
    request_id: str | None
    global_request_id: str | None


def retry_origins(session: orm.Session, order_ids: abc.Collection[str]
                  ) -> dict[str, RetryOrigin]:
    """Return ``{id: RetryOrigin}`` of those of ``order_ids`` that exist:
    their priorities and request ids."""
    if not order_ids:
        return {}
    return {order_id: RetryOrigin(priority, request_id, global_request_id)
            for order_id, priority, request_id, global_request_id in
            session.execute(
                sa.select(models.Order.id, models.Order.priority,
                          models.Order.request_id,
                          models.Order.global_request_id)
                .where(models.Order.id.in_(list(order_ids))))}


def list_orders(session: orm.Session, status: str | None = None,
                limit: int | None = None, *, project_id: str | None = None,
                order_type: str | None = None,
                after: tuple[Moment, str] | None = None,
                with_meta: bool = True,
                created_from: Moment | None = None,
                created_to: Moment | None = None,
                idempotency_key: str | None = None,
                meta: abc.Sequence[meta_search.MetaFilter] = ()
                ) -> list[rows.Order]:
    """Return orders, oldest first (by creation time, then id).

    :param with_meta: False: their ``meta`` is not read (it may be large)
        and must not be: a listing that does not show it.
    :param status: only the orders in this status.
    :param project_id: only this project's orders.
    :param order_type: only the orders of this type.
    :param after: ``(created_at, id)`` of an order: only those after it,
        the next page of a listing that ended there.
    :param created_from: only those created at or after it.
    :param created_to: only those created before it.
    :param idempotency_key: only those of this key.
    :param meta: only the orders whose metadata holds each filter's value
        at its path (``worker.db.meta_search``).
    """
    return list(session.scalars(list_statement(
        session.get_bind().dialect.name, status, limit,
        project_id=project_id, order_type=order_type, after=after,
        with_meta=with_meta, created_from=created_from,
        created_to=created_to, idempotency_key=idempotency_key,
        meta=meta)))


def list_statement(dialect: str, status: str | None = None,
                   limit: int | None = None, *,
                   project_id: str | None = None,
                   order_type: str | None = None,
                   after: tuple[Moment, str] | None = None,
                   with_meta: bool = True,
                   created_from: Moment | None = None,
                   created_to: Moment | None = None,
                   idempotency_key: str | None = None,
                   meta: abc.Sequence[meta_search.MetaFilter] = ()
                   ) -> sa.Select[typing.Any]:
    """``list_orders``' SELECT in the words of ``dialect`` (its meta
    filters are), for its callers and the plan benchmarks."""
    order = models.Order
    query = sa.select(order).order_by(order.created_at, order.id)
    if meta:
        query = query.where(meta_search.clause(dialect, order.meta, meta))
    if not with_meta:
        query = query.options(orm.defer(order.meta, raiseload=True))
    query = _filtered(query, status, project_id, order_type, created_from,
                      created_to, idempotency_key)
    if after is not None:
        created_at, order_id = after
        # The redundant ``created_at >= T`` gives the index a place to
        # start: without it a page deep in a project read every order of
        # the project before the marker and dropped them.
        query = query.where(order.created_at >= created_at, sa.or_(
            order.created_at > created_at,
            sa.and_(order.created_at == created_at, order.id > order_id)))
    if limit:
        query = query.limit(limit)
    return query


_Query = typing.TypeVar('_Query', bound=sa.Select[typing.Any])


def _filtered(query: _Query, status: str | None,
              project_id: str | None, order_type: str | None,
              created_from: Moment | None, created_to: Moment | None,
              idempotency_key: str | None) -> _Query:
    """``query`` narrowed by the filters given (None: not filtered)."""
    order = models.Order
    for column, value in ((order.status, status),
                          (order.project_id, project_id),
                          (order.type, order_type),
                          (order.idempotency_key, idempotency_key)):
        if value is not None:
            query = query.where(column == value)
    if created_from is not None:
        query = query.where(order.created_at >= created_from)
    if created_to is not None:
        query = query.where(order.created_at < created_to)
    return query


def count_orders(session: orm.Session, *, cap: int,
                 status: str | None = None, project_id: str | None = None,
                 order_type: str | None = None,
                 created_from: Moment | None = None,
                 created_to: Moment | None = None,
                 idempotency_key: str | None = None) -> int:
    """Count the orders ``list_orders`` selects with the same filters, up
    to ``cap``: a count costs at most ``cap`` index entries however
    many orders match (``cap`` means "at least that many")."""
    matching = _filtered(sa.select(models.Order.id), status, project_id,
                         order_type, created_from, created_to,
                         idempotency_key).limit(cap).subquery()
    return session.execute(
        sa.select(sa.func.count()).select_from(matching)).scalar_one()


def count_by_status(session: orm.Session) -> dict[str, int]:
    """Return ``{status: count}`` over every order."""
    query = sa.select(models.Order.status, sa.func.count()).group_by(
        models.Order.status)
    return {status: count for status, count in session.execute(query)}


def count_pending(session: orm.Session, order_type: str) -> int:
    """Count the PENDING orders of ``order_type`` (``[order_type:T]
    max_pending``): one range of ``ix_orders_type_status``, however many
    orders of other types or statuses there are."""
    return session.execute(
        sa.select(sa.func.count()).select_from(models.Order)
        .where(models.Order.type == order_type,
               models.Order.status == models.PENDING)).scalar_one()


def count_unfinished_by_status(session: orm.Session) -> dict[str, int]:
    """Return ``{status: count}`` of the orders not in a terminal status.

    Reads the unfinished statuses by name, through the index on
    ``status``: the finished orders, which pile up, are not read.
    """
    query = (sa.select(models.Order.status, sa.func.count())
             .where(models.Order.status.in_(models.UNFINISHED_STATUSES))
             .group_by(models.Order.status))
    return {status: count for status, count in session.execute(query)}


def count_unfinished_by_type(session: orm.Session) -> dict[str, int]:
    """Return ``{type: count}`` of the orders not in a terminal status."""
    query = (sa.select(models.Order.type, sa.func.count())
             .where(models.Order.status.not_in(models.TERMINAL_STATUSES))
             .group_by(models.Order.type))
    return {name: count for name, count in session.execute(query)}


def count_unfinished_by_version(session: orm.Session
                                ) -> dict[tuple[str, str | None], int]:
    """Return ``{(type, workflow_version): count}`` of the orders not in a
    terminal status (a version None: created before versions were
    recorded)."""
    query = (sa.select(models.Order.type, models.Order.workflow_version,
                       sa.func.count())
             .where(models.Order.status.not_in(models.TERMINAL_STATUSES))
             .group_by(models.Order.type, models.Order.workflow_version))
    return {(name, version): count
            for name, version, count in session.execute(query)}


def unfinished_graphs_without_version(
        session: orm.Session) -> dict[tuple[str, frozenset[str]], int]:
    """Return ``{(type, step names): count}`` of the orders not in a
    terminal status created before versions were recorded (migration
    0017): their graph is their rows. Read by the upgrade check, one row
    per step of those orders."""
    query = (sa.select(models.Order.type, models.OrderStep.order_id,
                       models.OrderStep.name)
             .join(models.OrderStep,
                   models.OrderStep.order_id == models.Order.id)
             .where(models.Order.workflow_version.is_(None),
                    models.Order.status.not_in(models.TERMINAL_STATUSES)))
    names: dict[tuple[str, str], set[str]] = {}
    for type_name, order_id, name in session.execute(query):
        names.setdefault((type_name, order_id), set()).add(name)
    counts: dict[tuple[str, frozenset[str]], int] = {}
    for (type_name, _), found in names.items():
        key = (type_name, frozenset(found))
        counts[key] = counts.get(key, 0) + 1
    return counts


def lock_live(session: orm.Session, order_id: str, now: Moment) -> bool:
    """Lock a PENDING or CANCELLING order for this transaction.

    A step that completes locks its order first, so the results of
    parallel steps of one order are written one after the other and the
    last one sees all the others (to turn the order ACTIVE once). Returns
    False if the order is no longer live.
    """
    result = statements.execute(session, _LOCK_LIVE, {
        'where_id': order_id, 'set_updated_at': now})
    return result.rowcount == 1


_LOCK_LIVE = (sa.update(_TABLE)
              .where(statements.where(_TABLE.c.id),
                     _TABLE.c.status.in_([models.PENDING,
                                          models.CANCELLING]))
              .values(statements.setting(_TABLE, ['updated_at'])))


@functools.lru_cache(maxsize=None)
def _move_statement(names: tuple[str, ...]) -> sa.Update:
    """The UPDATE of ``_move`` that sets the columns ``names``."""
    return (sa.update(_TABLE)
            .where(statements.where(_TABLE.c.id),
                   statements.where(_TABLE.c.status))
            .values(statements.setting(_TABLE, names)))


def _move(session: orm.Session, order_id: str, now: Moment, source: str,
          **values: Any) -> bool:
    """Update the order only if its status is still ``source``."""
    return _moves(session, [(order_id, values)], now, source) == 1


def _moves(session: orm.Session,
           moves: abc.Iterable[tuple[str, abc.Mapping[str, Any]]],
           now: Moment, source: str) -> int:
    """``_move`` several orders: ``[(order_id, values), ...]``.

    One execution per set of columns set, with the parameters of all its
    orders. Returns how many orders moved.
    """
    return statements.update_many(session, _move_statement, [
        (values, {'where_id': order_id, 'where_status': source})
        for order_id, values in moves], now)


def complete_many(
        session: orm.Session,
        completions: abc.Iterable[tuple[str, abc.Mapping[str, Any] | None]],
        now: Moment) -> int:
    """Move PENDING orders to ACTIVE, each with its ``meta`` as its
    metadata.

    The caller merges: an order's metadata changes only here and when it
    is created, so the order as its worker read it is the order now.

    :param completions: ``[(order_id, meta), ...]``.
    :returns: how many moved to ACTIVE; the others were not PENDING.
    """
    return _moves(session, [
        (order_id, dict(status=models.ACTIVE, meta=dict(meta or {})))
        for order_id, meta in completions], now, models.PENDING)


def fail(session: orm.Session, order_id: str, now: Moment,
         reason: str) -> bool:
    """Move a PENDING order to ERROR with ``reason``."""
    return _move(session, order_id, now, models.PENDING,
                 status=models.ERROR, error_reason=reason)


def resume(session: orm.Session, order_id: str, now: Moment) -> bool:
    """Move an ERROR order back to PENDING, its error reason cleared.

    Returns False if the order is not ERROR (or does not exist): of two
    concurrent resumes, the second waits for the first's row lock and
    finds it PENDING. The caller restarts its steps in the same
    transaction (``steps.restart``).
    """
    return _move(session, order_id, now, models.ERROR,
                 status=models.PENDING, error_reason=None)


def ids_by_update(session: orm.Session, status: str, limit: int, *,
                  since: Moment | None = None,
                  project_id: str | None = None,
                  order_type: str | None = None) -> list[str]:
    """Return up to ``limit`` ids of orders in ``status``, in the order
    they were last changed (``updated_at``, then id).

    :param since: only those that failed at or after this moment (an
        ERROR order's ``_failed_at``), not those merely changed since: the
        delivery of an order's events holds its row, and so moves its
        ``updated_at``, after it failed.

    Reads ``ix_orders_status_updated_at``: one range of it, however many
    orders have other statuses (an order changed last before ``since``
    did not fail after it), then one primary-key range of ``order_steps``
    for each order in that range.
    """
    order = models.Order
    query = (sa.select(order.id).where(order.status == status)
             .order_by(order.updated_at, order.id).limit(limit))
    if since is not None:
        query = query.where(order.updated_at >= since,
                            _failed_at(order) >= since)
    if project_id is not None:
        query = query.where(order.project_id == project_id)
    if order_type:
        query = query.where(order.type == order_type)
    return list(session.scalars(query))


def _failed_at(order: typing.Any) -> sa.ColumnElement[Moment]:
    """When ``order`` (its table or model) went to ERROR, as SQL: when its
    failed step ended (``steps.finish_many``, in the transaction that failed
    the order). A resume restarts that step, so an ERROR order has one
    FAILED step, of its last failure. An order failed before steps had
    rows has none: its ``updated_at`` then.
    """
    steps = statements.STEPS
    return sa.func.coalesce(
        sa.select(sa.func.max(steps.c.finished_at))
        .where(steps.c.order_id == order.id,
               steps.c.status == models.STEP_FAILED)
        .scalar_subquery(), order.updated_at)


def cancel(session: orm.Session, order_id: str, now: Moment, reason: str,
           compensating: bool) -> bool:
    """Move a PENDING order to CANCELLING (``compensating``) or CANCELLED.

    Returns False if the order is not PENDING (or does not exist).
    """
    return _move(session, order_id, now, models.PENDING,
                 status=(models.CANCELLING if compensating
                         else models.CANCELLED),
                 error_reason=reason)


def end_cancel(session: orm.Session, order_id: str, now: Moment,
               failure: str | None = None) -> bool:
    """Move a CANCELLING order to CANCELLED once its compensation ended.

    :param failure: how the compensation failed, appended to the reason
        the order was cancelled for.
    """
    values = {'status': models.CANCELLED}
    if failure is not None:
        order = statements.execute(session, sa.select(
            _TABLE.c.error_reason).where(_TABLE.c.id == order_id)).first()
        values['error_reason'] = '%s; %s' % (
            order.error_reason if order else 'cancelled', failure)
    return _move(session, order_id, now, models.CANCELLING, **values)


def count_by_status_and_type(session: orm.Session,
                             project_id: str | None = None
                             ) -> dict[tuple[str, str], int]:
    """``{(status, type): count}``, of ``project_id``'s orders only if
    given (``ix_orders_project_id_status``) or of every order."""
    query = sa.select(models.Order.status, models.Order.type,
                      sa.func.count()).group_by(models.Order.status,
                                                models.Order.type)
    if project_id is not None:
        query = query.where(models.Order.project_id == project_id)
    return {(status, kind): count
            for status, kind, count in session.execute(query)}


def times_since(session: orm.Session, since: Moment, *,
                finished: bool = False, project_id: str | None = None,
                limit: int = 10000) -> list[Moment]:
    """When the orders created since ``since`` were created or, with
    ``finished``, when those that turned ACTIVE since then did
    (``ix_orders_status_updated_at``); at most ``limit``: what a chart of
    the last minutes shows, never the whole table."""
    if finished:
        column = models.Order.updated_at
        query = sa.select(column).where(models.Order.status == models.ACTIVE)
    else:
        column = models.Order.created_at
        query = sa.select(column)
    query = query.where(column >= since)
    if project_id is not None:
        query = query.where(models.Order.project_id == project_id)
    return list(session.scalars(query.order_by(column.desc()).limit(limit)))
