"""``OrderAPI``: the front door's class. Built here, with its cancel,
resume and signal; its creation is its base class's
(``worker.api.creating``), its reads that one's base's
(``worker.api.queries``), its bulk actions by filter and its pauses
other bases' (``worker.api.bulk``, ``worker.api.pausing``).

A write goes downhill: the input checks (``worker.api.checks``), then one
command (``worker.api.commands``) that commits and returns what it wrote
and the steps to cast, then the announcement on the bus and the casts
(``worker.api.casts``). Nothing below calls back up.
"""

from oslo_log import log as logging

from worker.api import bulk
from worker.api import casts
from worker.api import checks
from worker.api import commands
from worker.api import creating
from worker.api import errors
from worker.api import pausing
from worker.api import signalling
from worker.api import values
from worker.common import clock as clock_module
from worker import conf as worker_conf
from worker import context as context_module
from worker.db import session as db_session
from worker.notifications import bus
from worker import order_types
from worker import rpc
from worker import rpcapi
from worker import tracing
from worker import values as worker_values

LOG = logging.getLogger(__name__)


class OrderAPI(bulk.OrderBulk, pausing.Pausing, signalling.Signalling,
               creating.OrderCreation):
    """Create, read, cancel, pause and wait for orders.

    Build it with ``from_config``; it is safe to share between threads.

    :param database: a ``worker.db.session.Database``.
    :param conf: the ``ConfigOpts`` with the worker's options registered.
    :param worker_api: a ``worker.rpcapi.WorkerAPI`` that casts an order's
        first steps, or None to leave them to the retry daemon (which
        dispatches them after ``[scheduler] dispatch_deadline_seconds``).
    :param now: returns the time (naive UTC) that the workers and the
        retry daemon compare with; by default, the database's.
    :param announcer: a ``worker.notifications.bus.Announcer`` that announces
        the orders' creation, cancellation and resumption on the bus, or
        None.
    """

    def __init__(self, database, conf, worker_api=None, now=None,
                 rows_per_cast=50, announcer=None):
        self._database = database
        self._conf = conf
        self._outbox = casts.Outbox(worker_api, rows_per_cast, announcer)
        self._now = now
        self._transport = None
        # The announcer ``from_config`` built, which ``close`` closes.
        self._own_announcer = None

    @classmethod
    def from_config(cls, conf):
        """Build the API from ``conf``: its ``[database] connection`` and
        ``[DEFAULT] transport_url``.

        Registers the options it reads (the worker's) on ``conf``; the
        caller parsed its files already. ``conf`` may be a ``ConfigOpts``
        of the caller's own: the options oslo.messaging keeps on
        ``cfg.CONF`` only are registered on it too
        (``worker.rpc.get_transport``). With ``[oslo_messaging_notifications]
        driver`` set, it announces its orders' changes on the bus
        (``worker.notifications.bus``).
        """
        database, worker_api, transport = connect(conf)
        announcer = bus.from_conf(conf)
        api = cls(database, conf, worker_api, announcer=announcer)
        api._transport = transport
        api._own_announcer = announcer
        return api

    def close(self):
        """Close the database connections and the RPC transport; send
        the announcements still queued (a few seconds at most)."""
        if self._own_announcer is not None:
            self._own_announcer.close()
        if self._transport is not None:
            self._transport.cleanup()
        self._database.dispose()
        # A command exits after close(): its spans must be sent first.
        tracing.flush()

    @property
    def database(self):
        """The ``worker.db.session.Database`` it writes to, for the APIs
        built beside it (``worker.api.schedules``)."""
        return self._database

    def now(self):
        """The time the processes share: the database's (naive UTC)."""
        if self._now is None:
            # Measured once against the database, as the daemons measure
            # their host's clock at each heartbeat.
            self._now = clock_module.measured(
                self._database, self._conf.max_clock_offset_seconds).now
        return self._now()

    def cancel(self, order_id, *, project_id=None, all_projects=False,
               reason='cancelled by request', requested_by=None):
        """Cancel a PENDING order and return it.

        Its pending steps never start, the claims of its running steps are
        revoked (their results are discarded) and its retry rows are
        removed. It is CANCELLED, or CANCELLING until its type's
        compensation step has run. Cancelling a cancelled order returns it
        as it is.

        :param requested_by: who asked (a ``Requester``): the order's
            history records it beside the cancel, with ``reason``.

        :raises OrderNotFound: no such order (in ``project_id``).
        :raises OrderNotCancellable: the order is ACTIVE or ERROR.
        :raises InvalidProjectScope: as ``get``.
        """
        scope = checks.scope(project_id, all_projects)
        checks.check_text(reason, 'reason', checks.MAX_REASON_LENGTH,
                          allow_controls=True)
        checks.check_requester(requested_by)
        order = self._get(order_id, scope)
        if order.status in (values.CANCELLING, values.CANCELLED):
            return order
        if order.status == values.PENDING:
            request, now = worker_values.request_ids_of(order), self.now()
            cancelled = commands.cancel(
                self._database, _compensating(order), order.id, reason,
                now, request=request, requested_by=requested_by)
            if cancelled is not None:
                self._outbox.cast(cancelled.to_cast, request)
                if cancelled.compensation is None:
                    # CANCELLED at once; with a compensation step, the
                    # worker that ends it announces it.
                    self._outbox.announce(bus.CANCELLED, [order],
                                          values.CANCELLED, now,
                                          reason=reason)
                return self._get(order_id, scope)
        # It ended meanwhile, or had ended.
        order = self._get(order_id, scope)
        if order.status in (values.CANCELLING, values.CANCELLED):
            return order
        raise errors.OrderNotCancellable('order %s is %s: it has ended and '
                                         'cannot be cancelled'
                                         % (order.id, order.status))

    def resume(self, order_id, *, project_id=None, all_projects=False,
               context=None, requested_by=None):
        """Put an ERROR order back to PENDING and return it.

        Its DONE steps stay DONE. The step that failed, the steps its
        failure cancelled and those that never ran run again, from
        scratch (attempts, failures, polls and crashes start again at 0)
        and with the same idempotency keys; those whose predecessors are
        all DONE are cast at once. An ``order.resumed`` event is sent to
        its callback URLs. An order resumed at the same moment by another
        caller is returned as it is: exactly one of them resumed it. A
        resumed order that fails again can be resumed again.

        :param context: the ``oslo_context.context.RequestContext`` of the
            request that resumes it: who it was (its user and request
            id) is logged, with the order's own request ids.
        :param requested_by: who asked (a ``Requester``): the order's
            history records it beside the resume.
        :raises OrderNotFound: no such order (in ``project_id``).
        :raises OrderNotResumable: the order is not ERROR.
        :raises InvalidProjectScope: as ``get``.
        """
        scope = checks.scope(project_id, all_projects)
        checks.check_context(context)
        checks.check_requester(requested_by)
        return self._resume(order_id, scope, context, requested_by)

    def _resume(self, order_id, scope, context, requested_by):
        """``resume`` in ``scope`` (a project id, or None)."""
        order = self._get(order_id, scope)
        if order.status != values.ERROR:
            raise errors.OrderNotResumable(
                'order %s is %s: only an ERROR order can be resumed'
                % (order.id, order.status))
        request, now = worker_values.request_ids_of(order), self.now()
        try:
            # Its own graph: every step of it has a row, and none of a
            # graph it was not created with is started.
            resumed = commands.resume(self._database,
                                      checks.order_workflow(order), order.id,
                                      now, request=request,
                                      requested_by=requested_by)
        except (commands.NothingToResume,
                order_types.UnknownWorkflowVersion) as exc:
            raise errors.OrderNotResumable(str(exc)) from None
        if resumed is None:
            LOG.info('Order %s was resumed by another request first',
                     order.id, context=context_module.for_ids(request))
            return self._get(order.id, scope)
        self._outbox.announce(bus.RESUMED, [order], values.PENDING, now)
        self._outbox.cast(resumed.to_cast, request)
        LOG.info('Order %s resumed by %s (it was ERROR: %s); step(s) %s '
                 'start again%s', order.id, _who(context), order.error_reason,
                 ', '.join(step.step for step in resumed.started),
                 ', then %s' % ', '.join(resumed.waiting)
                 if resumed.waiting else '',
                 context=context_module.for_ids(request))
        return self._get(order.id, scope)

    def resume_many(self, *, order_type=None, since=None, project_id=None,
                    all_projects=False, limit=100, context=None,
                    requested_by=None):
        """Resume up to ``limit`` ERROR orders, those changed least
        recently first (by ``updated_at``, which the delivery of their
        events moves past the time they failed); each in a transaction of
        its own, so that one that cannot be resumed does not stop the
        others.

        :param order_type: only the orders of this type.
        :param since: only the orders that went to ERROR at or after this
            time (a ``datetime``, naive UTC or aware): when their failed
            step ended, not their ``updated_at``, which the delivery of
            their events moves later.
        :param project_id: only this project's orders.
        :param all_projects: True for every project's (one of the two).
        :param context: as ``resume``'s.
        :param requested_by: as ``resume``'s, recorded in each order's
            history.
        :returns: a ``BulkResume``.
        :raises InvalidRequest: ``limit`` is not 1 to ``MAX_LIMIT``, or
            ``since`` is not a time.
        :raises InvalidProjectScope: as ``get``.
        """
        scope = checks.selection(project_id, all_projects, limit,
                                 order_type)
        checks.check_context(context)
        checks.check_requester(requested_by)
        since = checks.naive_utc(since, 'since')
        with self._database.reader() as session:
            ids = self._database.queries.orders.ids_by_update(
                session, values.ERROR, limit, since=since, project_id=scope,
                order_type=order_type)
        resumed, failed = [], {}
        for order_id in ids:
            try:
                resumed.append(self._resume(order_id, scope, context,
                                            requested_by))
            except Exception as exc:
                LOG.warning('Order %s could not be resumed: %s', order_id,
                            exc, exc_info=not isinstance(
                                exc, errors.OrderAPIError))
                failed[order_id] = str(exc)
        return values.BulkResume(resumed=tuple(resumed), failed=failed)


def connect(conf):
    """``(database, worker_api, transport)`` of ``conf``'s ``[database]
    connection`` and ``[DEFAULT] transport_url``, as ``from_config``
    builds them."""
    worker_conf.register_opts(conf)
    # The process's spans (its creations and casts) are exported by the
    # provider of [tracing]; nothing is built with tracing off.
    tracing.configure(conf)
    database = db_session.Database.from_conf(conf)
    transport = rpc.get_transport(conf)
    return (database, rpcapi.WorkerAPI.from_conf(conf, transport),
            transport)


def _compensating(order):
    """The workflow whose compensation a cancel of ``order`` adds: its
    own graph's; its type's current one if this process does not declare
    its graph, since a cancel is never refused for it (the compensation
    then waits for a worker that declares the graph)."""
    try:
        return checks.order_workflow(order)
    except order_types.UnknownWorkflowVersion:
        return checks.workflow(order.type)


def _who(context):
    """Who a request is, for a log line: its user and request id."""
    if context is None:
        return 'a caller without a request context'
    user = getattr(context, 'user_name', None) or getattr(
        context, 'user_id', None)
    return '%s(request %s)' % ('user %s ' % user if user else '',
                               context.request_id)
