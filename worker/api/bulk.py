"""Bulk actions by filter: ``OrderAPI.bulk``, a base of ``OrderAPI``.

One call selects the orders that match every filter given (type,
status, project, creation range, metadata) and applies one action to
them, a batch at a time: each batch is read by keyset over the orders'
ids (``worker.db.bulk_orders``), then changed in one short transaction
with the effects of a single cancel or resume on each order
(``worker.api.commands.cancel_batch``, ``resume_batch``: the steps'
tokens, the retry rows, the events, the compensation or restarted steps
to cast), then announced and cast before the next batch is read. No
transaction spans more than one batch, so the workers go on with every
other order meanwhile.

An action is one entry of ``ACTIONS``: the statuses it applies to and
one function over a batch of orders.
"""

import dataclasses
import typing

from oslo_log import log as logging

from worker.api import checks
from worker.api import commands
from worker.api import errors
from worker.api import meta_filters
from worker.api import pausing
from worker.api import values
from worker.common import inputs
from worker.db import bulk_orders
from worker.notifications import bus
from worker import values as worker_values

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class BulkResult:
    """What ``OrderAPI.bulk`` did, or with ``dry_run`` would do."""

    #: The action: ``cancel``, ``resume``, ``reprioritize``...
    action: str
    #: True: nothing was changed; ``changed`` is how many would be.
    dry_run: bool
    #: How many orders the filters matched when the action began.
    matched: int
    #: How many orders it changed (a dry run: would change, the bound
    #: applied); an order that moved on meanwhile is not counted.
    changed: int
    #: The bound it applied: the caller's ``limit`` or ``[api_limits]
    #: max_bulk_orders``.
    limit: int
    #: ``{order_id: why}`` of the matched orders it could not change.
    failed: dict[str, str] = dataclasses.field(default_factory=dict)


#: The reason recorded on the orders a bulk cancel cancels (or pauses),
#: by default.
BULK_CANCEL_REASON = 'cancelled in bulk'
BULK_PAUSE_REASON = 'paused in bulk'


class Batch(typing.NamedTuple):
    """What an action did to one batch: the ids it changed and
    ``{order_id: why}`` of those it could not."""

    changed: list[str]
    failed: dict[str, str]


class Action(typing.NamedTuple):
    """A bulk action: the statuses of the orders it applies to (the
    default of the status filter) and its function over a batch,
    ``run(tools, orders, options, now) -> Batch``, where ``tools`` are
    the call's ``Tools``, ``orders`` ``worker.db.bulk_orders.batch_after``
    rows and ``options`` the ``Options`` of the call."""

    statuses: tuple[str, ...]
    run: typing.Callable[..., Batch]


class Tools(typing.NamedTuple):
    """What an action's function works with: the ``OrderAPI`` (whose
    single-order methods an action may call for each order, in its own
    transaction), its database and its ``worker.api.casts.Outbox``."""

    api: typing.Any
    database: typing.Any
    outbox: typing.Any


class Options(typing.NamedTuple):
    """The parameters of a bulk call that its action reads."""

    reason: str
    priority: int | None
    context: typing.Any


def _cancel(tools, orders, options, now):
    """Cancel a batch of PENDING orders in one transaction, then announce
    those that ended at once and cast their compensation steps and
    deliveries, as ``OrderAPI.cancel`` does for one."""
    done = commands.cancel_batch(tools.database, [
        (checks.workflow(order.type), order.id,
         worker_values.request_ids_of(order)) for order in orders],
        options.reason, now)
    ended = [order for order in orders if order.id in done and
             done[order.id].compensation is None]
    tools.outbox.announce(bus.CANCELLED, ended, values.CANCELLED, now,
                          reason=options.reason)
    _cast(tools.outbox, orders, done)
    return Batch(sorted(done), {})


def _resume(tools, orders, options, now):
    """Resume a batch of ERROR orders in one transaction, then announce
    them and cast their restarted steps, as ``OrderAPI.resume`` does for
    one."""
    done, failed = commands.resume_batch(tools.database, [
        (checks.workflow(order.type), order.id,
         worker_values.request_ids_of(order)) for order in orders], now)
    tools.outbox.announce(bus.RESUMED, [
        order for order in orders if order.id in done], values.PENDING, now)
    _cast(tools.outbox, orders, done)
    return Batch(sorted(done), failed)


def _reprioritize(tools, orders, options, now):
    """Give a batch of orders, and their retry rows, the new priority in
    one transaction. The steps already cast run as cast; the priority
    orders the retry daemon's next passes."""
    database = tools.database
    with database.session() as session, session.begin():
        changed = database.queries.bulk_orders.set_priority_many(
            session, [order.id for order in orders],
            REPRIORITIZED_STATUSES, options.priority, now)
    return Batch(changed, {})


def _pause(tools, orders, options, now):
    """Pause a batch of PENDING orders in one transaction (one INSERT of
    their pauses, ``pauses.add_many``), then announce those it paused, as
    ``OrderAPI.pause`` does for one. Their steps wait from their next
    claim on; a step running now finishes."""
    database = tools.database
    with database.session() as session, session.begin():
        paused = database.repositories.pauses.add_many(
            session, 'order', [order.id for order in orders],
            options.reason, now,
            {order.id: order.project_id for order in orders})
    tools.outbox.announce(bus.PAUSED, [
        order for order in orders if order.id in set(paused)],
        values.PENDING, now, reason=options.reason)
    return Batch(paused, {})


def _cast(outbox, orders, done):
    """Cast what each order of the batch that changed has to cast, with
    its own request ids."""
    for order in orders:
        if order.id in done and done[order.id].to_cast:
            outbox.cast(done[order.id].to_cast,
                        worker_values.request_ids_of(order))


#: The statuses ``reprioritize`` applies to: the orders that still run.
REPRIORITIZED_STATUSES = (values.PENDING, values.CANCELLING)

#: The bulk actions by name.
ACTIONS = {
    'cancel': Action((values.PENDING,), _cancel),
    'resume': Action((values.ERROR,), _resume),
    'reprioritize': Action(REPRIORITIZED_STATUSES, _reprioritize),
    'pause': Action((values.PENDING,), _pause),
}


def _reason(action, reason):
    """The checked reason of ``action``, or its default: a pause's is
    shorter (``pauses.reason``) and has no line breaks."""
    if action == 'pause':
        reason = BULK_PAUSE_REASON if reason is None else reason
        checks.check_text(reason, 'reason', pausing.MAX_REASON_LENGTH)
        return reason
    reason = BULK_CANCEL_REASON if reason is None else reason
    checks.check_text(reason, 'reason', checks.MAX_REASON_LENGTH,
                      allow_controls=True)
    return reason


class OrderBulk:
    """``bulk``; a base of ``OrderAPI``, whose ``__init__`` sets the
    database, configuration and outbox it uses."""

    _conf: typing.Any
    _database: typing.Any
    _outbox: typing.Any
    now: typing.Callable[[], typing.Any]

    def bulk(self, action, *, project_id=None, all_projects=False,
             order_type=None, status=None, since=None, until=None,
             meta=None, priority=None, limit=None, dry_run=False,
             reason=None, context=None):
        """Apply ``action`` to the orders that match every filter given,
        in batches of ``[api_limits] bulk_batch_size`` orders, each in a
        transaction of its own; return a ``BulkResult``.

        :param action: a name of ``ACTIONS``: ``cancel`` (PENDING orders),
            ``resume`` (ERROR orders), ``reprioritize`` (PENDING and
            CANCELLING orders, with ``priority``) or ``pause``.
        :param status: only the orders in this status, one the action
            applies to (by default, all of those).
        :param since: only the orders created at or after this time (a
            ``datetime``, naive UTC or aware).
        :param until: only the orders created before this time.
        :param meta: ``{'path.to.key': value}``, as ``list``'s.
        :param limit: change at most this many orders (1 to
            ``[api_limits] max_bulk_orders``, the default).
        :param dry_run: change nothing: count the orders it would change.
        :param reason: ``cancel``'s reason, recorded on each order, or
            ``pause``'s, on each pause (at most 255 characters); by
            default ``BULK_CANCEL_REASON`` or ``BULK_PAUSE_REASON``.
        :param context: the request's ``RequestContext``, for the log.
        :raises InvalidRequest: an unknown action, a status the action
            does not apply to,
            a missing or needless ``priority``, a bad filter.
        :raises OutOfBounds: ``limit`` or a meta filter beyond its bound.
        :raises InvalidProjectScope: as ``get``.
        """
        found = self._action(action)
        selection = _selection(
            _statuses(action, found, status),
            checks.scope(project_id, all_projects), order_type, since,
            until, meta)
        reason = _reason(action, reason)
        checks.check_context(context)
        options = Options(reason, _priority(action, priority), context)
        limit = self._bound(limit)
        with self._database.reader() as session:
            matched = self._database.queries.bulk_orders.count(
                session, selection)
        if dry_run:
            return BulkResult(action, True, matched, min(matched, limit),
                              limit)
        changed, failed = self._run(found.run, selection, options, limit)
        LOG.info('Bulk %s: %d order(s) matched, %d changed, %d not',
                 action, matched, changed, len(failed), context=context)
        return BulkResult(action, False, matched, changed, limit, failed)

    def _action(self, name):
        """The ``Action`` named ``name``, one this release has."""
        found = ACTIONS.get(name)
        if found is None:
            raise errors.InvalidRequest(
                'no bulk action %s; one of %s'
                % (checks.SHORT.repr(name), ', '.join(sorted(ACTIONS))))
        return found

    def _bound(self, limit):
        """``limit``, or the configured maximum; checked against it."""
        maximum = self._conf.api_limits.max_bulk_orders
        if limit is None:
            return maximum
        checks.checked(inputs.check_count, limit, 'limit', maximum)
        return limit

    def _run(self, run, selection, options, limit):
        """Apply ``run`` batch after batch until ``limit`` orders were
        taken or none is left; ``(changed, failed)``."""
        size = self._conf.api_limits.bulk_batch_size
        tools = Tools(self, self._database, self._outbox)
        changed, failed, taken, after = 0, {}, 0, None
        while taken < limit:
            with self._database.reader() as session:
                orders = self._database.queries.bulk_orders.batch_after(
                    session, selection, after, min(size, limit - taken))
            if not orders:
                break
            batch = run(tools, orders, options, self.now())
            changed += len(batch.changed)
            failed.update(batch.failed)
            taken += len(orders)
            after = orders[-1].id
        return changed, failed


def _selection(statuses, scope, order_type, since, until, meta):
    """The ``bulk_orders.Selection`` of ``bulk``'s filters, checked."""
    if order_type is not None:
        checks.check_order_type(order_type)
    return bulk_orders.Selection(
        statuses=statuses, order_type=order_type, project_id=scope,
        since=checks.naive_utc(since, 'since'),
        until=checks.naive_utc(until, 'until'),
        meta=meta_filters.check(meta))


def _statuses(name, action, status):
    """The statuses the selection reads: ``status`` if the action applies
    to it, else all those it applies to."""
    if status is None:
        return action.statuses
    checks.check_status(status)
    if status not in action.statuses:
        raise errors.InvalidRequest(
            'bulk %s applies to %s orders, not %s'
            % (name, ' and '.join(action.statuses), status))
    return (status,)


def _priority(name, priority):
    """``reprioritize``'s new priority, checked; None for the others."""
    if name != 'reprioritize':
        if priority is not None:
            raise errors.InvalidRequest('priority goes with reprioritize '
                                        'only, not %s' % name)
        return None
    if priority is None:
        raise errors.InvalidRequest('reprioritize needs the new priority')
    checks.check_priority(priority)
    return priority
