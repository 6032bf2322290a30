"""The creation side of ``worker.api.OrderAPI``: create, create_many,
check and submit.

A create goes downhill: the checks of its request
(``worker.api.checks``), the order of its idempotency key if it has one
(``queries``), one command that commits (``worker.api.commands``), then
its announcement and casts (``worker.api.casts``).
"""

import typing

from oslo_db import exception as db_exception
from oslo_log import log as logging

from worker.api import admission
from worker.api import casts
from worker.api import checks
from worker.api import commands
from worker.api import errors
from worker.api import queries
from worker.api import quotas
from worker.api import requests
from worker.api import values
from worker.conf import order_types as type_options
from worker import context as context_module
from worker.db import orders as order_rows
from worker.notifications import bus
from worker import tracing
from worker import values as worker_values

LOG = logging.getLogger(__name__)


class OrderCreation(queries.OrderQueries):
    """Create orders; the base of ``OrderAPI``, whose ``__init__`` sets
    the database, the configuration, the ``casts.Outbox`` and the
    clock (``now``) this uses."""

    _conf: typing.Any
    _outbox: casts.Outbox

    def create(self, order_type, meta, *, project_id, idempotency_key=None,
               priority=0, callback_urls=(), context=None, not_before=None):
        """Create a PENDING order of ``order_type`` and start its steps.

        The order is committed before its first steps are cast: a cast
        that fails loses nothing (the retry daemon dispatches them).

        With an ``idempotency_key``, a second create of the same request
        (type, meta, priority and callback URLs) in the same project
        returns the order the first one created, however many callers
        race; a different request raises ``IdempotencyConflict`` and
        creates nothing.

        :param meta: a JSON object that the type's ``meta_schema``
            accepts.
        :param project_id: the project that owns the order.
        :param priority: 0 to 9, higher sooner when retries queue up.
        :param callback_urls: URLs that receive the order's events
            (doc/notifications.md); their hosts must be allowed by
            ``[notifications] allowed_hosts``.
        :param context: the ``oslo_context.context.RequestContext`` of the
            request; its ``request_id`` and ``global_request_id`` are kept
            with the order and appear in every log line about it. A new
            one if None.
        :param not_before: a ``datetime`` (aware, or naive for UTC) at
            which the order starts, at most ``MAX_START_DELAY`` ahead:
            it is PENDING until then and its first steps wait in the
            retry table, due at that time. At or before now (the
            database's clock), or None: it starts at once. Part of the
            request that an idempotency key names.
        :returns: the ``Order``.
        :raises UnknownOrderType, InvalidMeta, InvalidRequest,
            URLNotAllowed, IdempotencyConflict, TooManyPendingOrders:
            ``OutOfBounds`` and ``InvalidCharacters`` (kinds of
            ``InvalidRequest``) beyond the bounds of ``[api_limits]`` and
            of the columns (doc/api.md, "Bounds"); ``TooManyPendingOrders``
            when its type's ``[order_type:T] max_pending`` orders are
            PENDING already (never for a request with the idempotency key
            of an order that exists: that order is returned).
        """
        [order] = self.submit(requests.NewOrder(
            order_type, meta, project_id, idempotency_key=idempotency_key,
            priority=priority, callback_urls=callback_urls,
            context=context, not_before=not_before))
        return order

    def create_many(self, order_type, meta, count, *, project_id,
                    priority=0, callback_urls=(), context=None,
                    not_before=None):
        """Create ``count`` orders of one request in one transaction.

        As ``create`` without an idempotency key; their first steps go in
        messages of several steps each. Returns the ``Order``s, without
        their steps (as ``list`` does). With a ``max_pending``, all of
        them are admitted or none (``TooManyPendingOrders``).

        :raises OutOfBounds: ``count`` is not an integer from 1 to
            ``[api_limits] max_orders_per_request``.
        """
        checks.check_count(count, self._conf)
        return self.submit(requests.NewOrder(
            order_type, meta, project_id, count=count, priority=priority,
            callback_urls=callback_urls, context=context,
            not_before=not_before))

    def check(self, order_type, meta, *, project_id, priority=0):
        """Check a request as ``create`` does, and write nothing.

        :raises UnknownOrderType, InvalidMeta, InvalidRequest:
        """
        workflow = checks.workflow(order_type)
        checks.check_project(project_id)
        checks.check_meta(workflow, meta, self._conf)
        checks.check_priority(priority)
        return workflow

    def submit(self, request):
        """Create the orders of ``request`` (a
        ``worker.api.requests.NewOrder``) as ``create`` (one) or
        ``create_many`` (several) does; return the ``Order``s.

        The way the APIs built beside this one create orders, with what
        a caller of ``create`` does not give (a schedule's id).
        """
        if not tracing.ENABLED:
            return self._submit(request)
        # The order's trace starts here (or joins the caller's current
        # span): its casts and every step of its life are children of
        # this span, whose carrier the order keeps.
        with tracing.span('order.create', {
                'barbican_retry.order_type': request.order_type,
                'barbican_retry.count': request.count}) as span:
            orders = self._submit(request, span.carrier)
            if request.count == 1 and orders:
                span.set('barbican_retry.order_id', orders[0].id)
            return orders

    def _submit(self, request, trace_context=None):
        """``submit`` within the span of the creation (``trace_context``,
        its carrier; None with tracing off)."""
        workflow = self.check(request.order_type, request.meta,
                              project_id=request.project_id,
                              priority=request.priority)
        checks.check_key(request.idempotency_key)
        checks.check_context(request.context)
        urls = checks.callback_urls(self._conf, self._database,
                                    request.callback_urls,
                                    request.project_id)
        not_before = checks.naive_utc(request.not_before, 'not_before')
        context = request.context or context_module.new_request()
        origin, given_hash = _origin(request, not_before, context,
                                     trace_context)
        if request.idempotency_key is not None:
            existing = self._by_key(origin, given_hash)
            if existing is not None:
                return [existing]
        now = self.now()
        checks.check_start(not_before, now)
        return self._write(requests.CreateOrders(
            workflow=workflow, meta=request.meta, count=request.count,
            priority=request.priority, notify=urls, origin=origin,
            not_before=not_before,
            max_pending=type_options.max_pending(self._conf, workflow),
            project_quota=self._conf.quota.pending_orders_per_project,
            first_run_delay=self._conf.notifications.first_run_delay_seconds
        ), now, context)

    def _write(self, command, now, context):
        """``commands.create``, then its orders announced and their steps
        cast; or the order of a concurrent request with the key, if that
        one won the race."""
        origin = command.origin
        try:
            created = commands.create(self._database, command, now)
        except (admission.TooManyPending, quotas.OverQuota) as exc:
            # A concurrent request with our key took the last place: its
            # order is ours, never refused.
            existing = self._by_key(origin) if origin.idempotency_key \
                is not None else None
            if existing is None:
                raise _refused(exc, command) from None
            return [existing]
        except (db_exception.DBDuplicateEntry, db_exception.DBDeadlock):
            # Another caller committed the key between our read and our
            # insert (on Galera, its write set won at COMMIT): theirs is
            # the order.
            existing = self._by_key(origin) if origin.idempotency_key \
                is not None else None
            if existing is None:
                raise
            LOG.info('Idempotency key %r: a concurrent request created '
                     'order %s first', origin.idempotency_key, existing.id,
                     context=context)
            return [existing]
        self._outbox.announce(bus.CREATE, created.orders, values.PENDING,
                              now)
        self._outbox.cast(created.to_cast,
                          worker_values.request_ids_of(origin))
        if command.count > 1:
            return [values.order_of(row, ()) for row in created.orders]
        # What was just written, without reading it back.
        row = created.orders[0]
        return [values.order_of(row, values.new_steps(
            command.workflow, created.deliveries, row.not_before))]


def _origin(request, not_before, context, trace_context):
    """``(origin, given_hash)``: the ``worker.db.orders.Origin`` the
    orders of ``request`` keep (its fingerprint canonical), and the
    fingerprint with its URLs as given (``NewOrder.fingerprints``)."""
    hashes = (request.fingerprints(not_before)
              if request.idempotency_key is not None else (None, None))
    return order_rows.Origin(
        project_id=request.project_id,
        idempotency_key=request.idempotency_key, request_hash=hashes[0],
        request_id=context.request_id,
        global_request_id=context.global_request_id,
        schedule_id=request.schedule_id,
        trace_context=trace_context), hashes[1]


def _refused(exc, command):
    """The API's error for a create that its type's admission
    (``TooManyPendingOrders``) or its project's quota
    (``ProjectQuotaExceeded``) refused."""
    if isinstance(exc, quotas.OverQuota):
        return errors.ProjectQuotaExceeded(
            str(exc), command.workflow.type_name, exc.bound, exc.pending,
            exc.project_id)
    return errors.TooManyPendingOrders(str(exc), exc.order_type, exc.bound,
                                       exc.pending)
