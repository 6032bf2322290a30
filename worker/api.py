"""The public Python API of barbican-retry: create, read, cancel, resume
and wait for orders.

This is the interface that a service builds on, as nova's API service
builds on ``nova.compute.api``: an API server creates its long-running
work here and reads it back; the operator commands and the demo use it
too. What is stable across releases (doc/api.md): the names of this
module's ``__all__``, the parameters of their public methods, the fields
of the values, and which exception each failure raises. The values are
frozen dataclasses, never ORM objects or sessions, so nothing of the
database leaks to the caller.

Example::

    api = OrderAPI.from_config(conf)
    order = api.create('certificate', {'plugin_name': 'simple'},
                       project_id=project_id, idempotency_key=key,
                       context=context)
    order = api.wait(order.id, timeout=60, project_id=project_id)

A project's caller (``project_id`` given) never sees another project's
orders: they are ``OrderNotFound``, as if they did not exist. An
operator's view of every project is asked for by ``all_projects=True``;
a method that reads or changes orders refuses a call with neither
(``InvalidProjectScope``), so that a caller that forgets its project
fails closed.

What a caller passes is bounded (``[api_limits]``, the columns' sizes,
``worker.common.inputs``): every refusal is an ``InvalidRequest``, and
no other exception leaves this module for input it refuses.
"""

import contextlib
import dataclasses
import datetime
import hashlib
import json
import reprlib
import time
import typing

from oslo_db import exception as db_exception
from oslo_log import log as logging

from worker.common import admission
from worker.common import bus
from worker.common import clock as clock_module
from worker.common import coalesce
from worker.common import inputs
from worker.common import order_actions
from worker import conf as worker_conf
from worker.conf import order_types as type_options
from worker import context as context_module
from worker.db import models
from worker.db import orders as order_rows
from worker.db import session as db_session
from worker.notifications import subscriptions
from worker.notifications import targets
from worker import order_types
from worker.order_types import meta as meta_module
from worker import rpc
from worker import rpcapi
from worker import tracing

LOG = logging.getLogger(__name__)

__all__ = ['OrderAPI', 'Order', 'StepState', 'StepRun', 'OrderTypeInfo',
           'order_type_infos', 'order_type_info', 'BulkResume',
           'OrderAPIError', 'OrderNotFound', 'AmbiguousOrderId',
           'UnknownOrderType', 'InvalidMeta', 'InvalidRequest',
           'OutOfBounds', 'InvalidCharacters', 'InvalidProjectScope',
           'IdempotencyConflict', 'URLNotAllowed', 'TooManyPendingOrders',
           'OrderNotCancellable',
           'OrderNotResumable', 'Timeout', 'PENDING', 'ACTIVE', 'ERROR',
           'CANCELLING', 'CANCELLED', 'ORDER_STATUSES', 'FINAL_STATUSES',
           'DEFAULT_PROJECT', 'MIN_PRIORITY', 'MAX_PRIORITY',
           'MAX_PROJECT_ID_LENGTH', 'MAX_WAIT_SECONDS']

PENDING = models.PENDING
ACTIVE = models.ACTIVE
ERROR = models.ERROR
CANCELLING = models.CANCELLING
CANCELLED = models.CANCELLED
ORDER_STATUSES = models.ORDER_STATUSES
#: The statuses ``wait`` returns at: an order in one never changes again,
#: but for an ERROR order that is resumed (``OrderAPI.resume``).
FINAL_STATUSES = models.TERMINAL_STATUSES

#: The project of the orders created before projects existed (and of the
#: operator commands' orders created without ``--project``).
DEFAULT_PROJECT = models.DEFAULT_PROJECT
#: An order's priority, higher sooner.
MIN_PRIORITY = models.MIN_PRIORITY
MAX_PRIORITY = models.MAX_PRIORITY

#: The longest project id, idempotency key, order id (or schedule id),
#: order type name and callback URL; the first four are their columns'.
MAX_PROJECT_ID_LENGTH = inputs.MAX_PROJECT_ID_LENGTH
MAX_IDEMPOTENCY_KEY_LENGTH = 255
MAX_ORDER_ID_LENGTH = inputs.MAX_ORDER_ID_LENGTH
MAX_ORDER_TYPE_LENGTH = 32
MAX_URL_LENGTH = targets.MAX_URL_LENGTH
#: The longest reason of a cancel, and request id of a context.
MAX_REASON_LENGTH = 1000
MAX_REQUEST_ID_LENGTH = 64
#: The longest ``wait``: a day.
MAX_WAIT_SECONDS = 86400
#: The most orders one ``list`` or ``resume_many`` handles.
MAX_LIMIT = 1000
#: How far ahead an order may be asked to start (``not_before``): about
#: ten years.
MAX_START_DELAY = datetime.timedelta(days=3653)
# An error's quote of a client's value, cut short.
_SHORT = reprlib.Repr()
_SHORT.maxstring = 300

#: How often ``wait`` reads the order's status: one probe of the primary
#: key per waiter per second at most.
WAIT_INTERVAL_SECONDS = 1.0


class OrderAPIError(Exception):
    """Base class of the errors of ``worker.api``."""


class OrderNotFound(OrderAPIError, LookupError):
    """No such order, or not one of the caller's project."""


class AmbiguousOrderId(OrderAPIError, LookupError):
    """An id prefix that starts the ids of several orders."""


class UnknownOrderType(OrderAPIError, LookupError):
    """No order type of this name is installed; the message lists those
    that are."""


class InvalidRequest(OrderAPIError, ValueError):
    """A parameter that can never be right (a priority out of range, an
    empty project id, an unknown marker); the message names it."""


class OutOfBounds(InvalidRequest):
    """A value beyond a bound: too long, too large, too deep or too many
    (``[api_limits]``, doc/api.md "Bounds"). ``field`` names the
    parameter, ``bound`` says what it must be."""

    def __init__(self, message, field, bound):
        super().__init__(message)
        self.field = field
        self.bound = bound


class InvalidCharacters(InvalidRequest):
    """A parameter that must be a string and is not, or that holds a
    character it may not: a NUL, a lone surrogate or a control
    character. ``field`` names it, ``bound`` says what it must be."""

    def __init__(self, message, field, bound):
        super().__init__(message)
        self.field = field
        self.bound = bound


class InvalidProjectScope(InvalidRequest):
    """A call that reads or changes orders (or schedules) without a
    ``project_id`` and without ``all_projects=True``, or with both."""


class InvalidMeta(InvalidRequest, meta_module.InvalidMeta):
    """The order's ``meta`` does not satisfy its type's ``meta_schema``.

    ``path`` is where (a JSON path: ``$``, ``$.key``, ``$.list[2]``),
    ``rule`` which keyword of the schema failed (``type``, ``required``,
    ``additionalProperties``...) and ``reason`` jsonschema's words.
    """


class IdempotencyConflict(OrderAPIError):
    """The project has an order with this idempotency key, created by a
    different request; nothing was created."""

    def __init__(self, message, order_id):
        super().__init__(message)
        #: The order the key belongs to.
        self.order_id = order_id


class URLNotAllowed(InvalidRequest):
    """A callback URL whose host ``[notifications] allowed_hosts`` does
    not allow, that is not an http(s) URL, or that another project owns
    (it has a secret of its own: ``notification url set-secret``)."""


class TooManyPendingOrders(OrderAPIError):
    """The order type's ``[order_type:T] max_pending`` is reached: the
    orders asked for would put more of its orders PENDING than it allows.
    Nothing was created; a create may succeed once some of them have
    ended (ACTIVE, ERROR or CANCELLED)."""

    def __init__(self, message, order_type, max_pending, pending):
        super().__init__(message)
        #: The order type.
        self.order_type = order_type
        #: Its ``max_pending``.
        self.max_pending = max_pending
        #: How many of its orders were PENDING.
        self.pending = pending


class OrderNotCancellable(OrderAPIError):
    """The order is ACTIVE or ERROR: it has ended, it cannot be
    cancelled."""


class OrderNotResumable(OrderAPIError):
    """The order is not ERROR (PENDING, CANCELLING, ACTIVE or CANCELLED):
    only an order that failed can be resumed. The message names its
    status."""


class Timeout(OrderAPIError):
    """``wait`` timed out before the order ended; ``order`` is the order
    as last read."""

    def __init__(self, message, order):
        super().__init__(message)
        self.order = order


@dataclasses.dataclass(frozen=True)
class StepState:
    """One step of an order, as ``order show -f json`` shows it.

    ``status`` is ``WAITING``, ``QUEUED`` (cast, not taken up yet),
    ``RUNNING``, ``RETRYING`` (``next_retry_at`` says when), ``PARKED``
    (its retry row was set aside), ``DONE``, ``FAILED`` or ``CANCELLED``.
    The deliveries of the order's events are steps too
    (``notify:<url id>``, doc/notifications.md).
    """

    name: str
    #: The steps it runs after.
    after: tuple[str, ...]
    status: str
    #: Runs started.
    attempt: int
    #: The process (``pid@host``) running it, or None.
    owner: str | None
    started_at: datetime.datetime | None
    finished_at: datetime.datetime | None
    next_retry_at: datetime.datetime | None
    last_error: str | None
    #: Times the process running it died (``[worker] max_step_crashes``).
    crashes: int = 0
    #: The resource key whose free slot the step waits for
    #: (doc/flow-control.md), or None.
    waiting_for: str | None = None


@dataclasses.dataclass(frozen=True)
class StepRun:
    """One run of a step of an order that ended, as ``order history -f
    json`` shows it (with ``generation`` besides). Times are naive UTC.
    """

    step: str
    #: The step's runs so far when this one was claimed, this one
    #: included: 1 for its first run.
    attempt: int
    #: The process that ran it (``pid@host``).
    worker: str | None
    #: When it was claimed, and when it ended (its result written, or
    #: its step taken back).
    started_at: datetime.datetime | None
    finished_at: datetime.datetime
    #: ``done``, ``retry``, ``failed``, ``taken back`` or ``superseded``
    #: (doc/operations.md says what each means).
    result: str
    #: Its error, at most 1,000 characters; None if it had none.
    error: str | None
    #: The token it held: each run of a step holds a greater one.
    generation: int


@dataclasses.dataclass(frozen=True)
class Order:
    """An order as its caller sees it. Times are naive UTC."""

    id: str
    type: str
    #: ``PENDING``, ``ACTIVE``, ``ERROR``, ``CANCELLING`` or ``CANCELLED``.
    status: str
    project_id: str
    #: Its metadata: what it was created with, and once ACTIVE what its
    #: steps added; empty in what ``list(with_meta=False)`` returns.
    meta: dict[str, typing.Any]
    priority: int
    idempotency_key: str | None
    #: The request ids of the request that created it (oslo.context).
    request_id: str | None
    global_request_id: str | None
    #: Why it is ERROR or CANCELLED.
    error_reason: str | None
    created_at: datetime.datetime
    updated_at: datetime.datetime
    #: Its steps in the order its type declares them; empty in what
    #: ``list`` returns.
    steps: tuple[StepState, ...] = ()
    #: When its first steps start, if it was created to start later
    #: (``create``'s ``not_before``); None if it started at once.
    not_before: datetime.datetime | None = None
    #: The schedule that created it (``worker.schedule_api``), if one
    #: did.
    schedule_id: str | None = None


@dataclasses.dataclass(frozen=True)
class BulkResume:
    """What ``resume_many`` did."""

    #: The orders resumed, as they were right after (PENDING, or further
    #: on if their workers were quick), in the order they had failed.
    resumed: tuple[Order, ...]
    #: ``{order_id: why}`` of the orders it could not resume.
    failed: dict[str, str]


@dataclasses.dataclass(frozen=True)
class OrderTypeInfo:
    """An installed order type: its steps, compensation and meta schema.
    """

    name: str
    #: ``(step, (steps it comes after...))`` in declaration order.
    steps: tuple[tuple[str, tuple[str, ...]], ...]
    compensation: str | None
    #: The JSON Schema its orders' ``meta`` must satisfy, or None.
    meta_schema: dict[str, typing.Any] | None


def order_type_infos():
    """The installed order types (``OrderTypeInfo``), by name."""
    return [_type_info(name, workflow)
            for name, workflow in order_types.installed().items()]


def order_type_info(name):
    """The ``OrderTypeInfo`` of the installed type ``name``.

    :raises UnknownOrderType: no such type is installed.
    """
    return _type_info(name, _workflow(name))


def _type_info(name, workflow):
    return OrderTypeInfo(
        name=name,
        steps=tuple((step.name, tuple(step.after))
                    for step in workflow.steps),
        compensation=(workflow.compensation.name if workflow.compensation
                      else None),
        meta_schema=workflow.meta_schema)


class OrderAPI:
    """Create, read, cancel and wait for orders.

    Build it with ``from_config``; it is safe to share between threads.

    :param database: a ``worker.db.session.Database``.
    :param conf: the ``ConfigOpts`` with the worker's options registered.
    :param worker_api: a ``worker.rpcapi.WorkerAPI`` that casts an order's
        first steps, or None to leave them to the retry daemon (which
        dispatches them after ``[scheduler] dispatch_deadline_seconds``).
    :param now: returns the time (naive UTC) that the workers and the
        retry daemon compare with; by default, the database's.
    :param announcer: a ``worker.common.bus.Announcer`` that announces
        the orders' creation, cancellation and resumption on the bus, or
        None.
    """

    def __init__(self, database, conf, worker_api=None, now=None,
                 rows_per_cast=50, announcer=None):
        self._database = database
        self._announcer = announcer
        self._conf = conf
        # Concurrent requests' casts share messages
        # (``worker.common.coalesce``).
        self._worker_api = (coalesce.CoalescedCasts(worker_api,
                                                    rows_per_cast)
                            if worker_api is not None else None)
        self._now = now
        self._rows_per_cast = rows_per_cast
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
        (``worker.common.bus``).
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
        built beside it (``worker.schedule_api``)."""
        return self._database

    def now(self):
        """The time the processes share: the database's (naive UTC)."""
        if self._now is None:
            # Measured once against the database, as the daemons measure
            # their host's clock at each heartbeat.
            self._now = clock_module.measured(
                self._database, self._conf.max_clock_offset_seconds).now
        return self._now()

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
        [order] = self._create(order_type, meta, 1, project_id,
                               idempotency_key, priority, callback_urls,
                               context, not_before)
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
        with _checking():
            inputs.check_count(
                count, 'count', self._conf.api_limits.max_orders_per_request,
                '[api_limits] max_orders_per_request')
        return self._create(order_type, meta, count, project_id, None,
                            priority, callback_urls, context, not_before)

    def check(self, order_type, meta, *, project_id, priority=0):
        """Check a request as ``create`` does, and write nothing.

        :raises UnknownOrderType, InvalidMeta, InvalidRequest:
        """
        workflow = _workflow(order_type)
        _check_project(project_id)
        _check_meta(workflow, meta, self._conf)
        try:
            models.check_priority(priority)
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from None
        return workflow

    def _create(self, order_type, meta, count, project_id, idempotency_key,
                priority, callback_urls, context, not_before=None,
                schedule_id=None):
        """``create``'s and ``create_many``'s work; ``schedule_id`` is
        the schedule of a tick's order (``worker.schedule_api``)."""
        if not tracing.ENABLED:
            return self._create_checked(
                order_type, meta, count, project_id, idempotency_key,
                priority, callback_urls, context, not_before, schedule_id)
        # The order's trace starts here (or joins the caller's current
        # span): its casts and every step of its life are children of
        # this span, whose carrier the order keeps.
        with tracing.span('order.create', {
                'barbican_retry.order_type': order_type,
                'barbican_retry.count': count}) as span:
            orders = self._create_checked(
                order_type, meta, count, project_id, idempotency_key,
                priority, callback_urls, context, not_before, schedule_id,
                span.carrier)
            if count == 1 and orders:
                span.set('barbican_retry.order_id', orders[0].id)
            return orders

    def _create_checked(self, order_type, meta, count, project_id,
                        idempotency_key, priority, callback_urls, context,
                        not_before, schedule_id, trace_context=None):
        """``_create`` within the span of the creation (``trace_context``,
        its carrier; None with tracing off)."""
        workflow = self.check(order_type, meta, project_id=project_id,
                              priority=priority)
        _check_key(idempotency_key)
        _check_context(context)
        urls = self._urls(callback_urls, project_id)
        not_before = _naive_utc(not_before, 'not_before')
        context = context or context_module.new_request()
        hashes = ((_request_hash(order_type, meta, priority,
                                 _canonical_urls(callback_urls), not_before),
                   _request_hash(order_type, meta, priority, callback_urls,
                                 not_before))
                  if idempotency_key is not None else (None, None))
        origin = order_rows.Origin(
            project_id=project_id, idempotency_key=idempotency_key,
            request_hash=hashes[0],
            request_id=context.request_id,
            global_request_id=context.global_request_id,
            schedule_id=schedule_id, trace_context=trace_context)
        if idempotency_key is not None:
            existing = self._by_key(origin, hashes[1])
            if existing is not None:
                return [existing]
        now = self.now()
        _check_start(not_before, now)
        try:
            created = order_actions.create(
                self._database, self._worker_api, workflow, meta, count,
                now, rows_per_cast=self._rows_per_cast,
                priority=priority, notify=urls, origin=origin,
                not_before=not_before,
                max_pending=type_options.max_pending(self._conf, workflow),
                first_run_delay=(
                    self._conf.notifications.first_run_delay_seconds),
                before_cast=lambda orders: self._announce(
                    bus.CREATE, orders, models.PENDING, now))
        except admission.TooManyPending as exc:
            # A concurrent request with our key took the last place: its
            # order is ours, never refused.
            existing = (self._by_key(origin) if idempotency_key is not None
                        else None)
            if existing is None:
                raise TooManyPendingOrders(str(exc), exc.order_type,
                                           exc.bound, exc.pending) from None
            return [existing]
        except (db_exception.DBDuplicateEntry, db_exception.DBDeadlock):
            # Another caller committed the key between our read and our
            # insert (on Galera, its write set won at COMMIT): theirs is
            # the order.
            existing = (self._by_key(origin) if idempotency_key is not None
                        else None)
            if existing is None:
                raise
            LOG.info('Idempotency key %r: a concurrent request created '
                     'order %s first', idempotency_key, existing.id,
                     context=context)
            return [existing]
        if count > 1:
            return [_order(row, ()) for row in created.orders]
        # What was just written, without reading it back.
        row = created.orders[0]
        return [_order(row, _new_steps(workflow, created.deliveries,
                                       row.not_before))]

    def _by_key(self, origin, given_hash=None):
        """The order created with ``origin``'s key, if the same request
        created it; raises ``IdempotencyConflict`` if another did.

        :param given_hash: the request's fingerprint with its URLs as
            given, which the release before stored (its URLs were not
            canonical): a retry spelling them the same is the same
            request.
        """
        repositories = self._database.repositories
        with self._database.reader() as session:
            row = repositories.orders.find_by_key(
                session, origin.project_id, origin.idempotency_key)
            order = row and self._read(session, row)
        if row is None:
            return None
        if row.request_hash not in (origin.request_hash, given_hash):
            raise IdempotencyConflict(
                'idempotency key %r of project %s was used for order %s by '
                'a different request (its type, meta, priority or callback '
                'URLs differ); nothing was created'
                % (origin.idempotency_key, origin.project_id, row.id),
                row.id)
        LOG.info('Order %s exists for idempotency key %r; returned it',
                 row.id, origin.idempotency_key,
                 context=context_module.for_ids(context_module.of_order(row)))
        return order

    def _urls(self, callback_urls, project_id):
        """The order's URLs (``subscriptions.urls_for_order``): at most
        ``[api_limits] max_callback_urls`` strings of the caller's, none
        owned by another project."""
        if not isinstance(callback_urls, (list, tuple)):
            raise InvalidRequest('callback_urls must be a list of URLs, '
                                 'not %s' % type(callback_urls).__name__)
        bound = self._conf.api_limits.max_callback_urls
        if len(callback_urls) > bound:
            raise OutOfBounds(
                'callback_urls must be %d URLs at most ([api_limits] '
                'max_callback_urls), not %d' % (bound, len(callback_urls)),
                'callback_urls', '%d URLs at most' % bound)
        for index, url in enumerate(callback_urls):
            _check_text(url, 'callback_urls[%d]' % index, MAX_URL_LENGTH)
        try:
            return subscriptions.urls_for_order(
                self._conf, list(callback_urls), self._database, project_id)
        except targets.RefusedUrl as exc:
            raise URLNotAllowed(str(exc)) from None

    def get(self, order_id, *, project_id=None, all_projects=False):
        """Return the ``Order`` with its steps.

        :param project_id: the caller's project: another project's order
            is not found.
        :param all_projects: True for any project's order (an
            operator's view), instead of ``project_id``.
        :raises OrderNotFound: no such order (in ``project_id``).
        :raises InvalidProjectScope: neither ``project_id`` nor
            ``all_projects=True``, or both.
        """
        return self._get(order_id,
                         checked(inputs.scope, project_id, all_projects))

    def _get(self, order_id, scope):
        """``get`` in ``scope`` (a project id, or None for every
        project)."""
        checked(inputs.check_order_id, order_id)
        with self._database.reader() as session:
            row = self._database.repositories.orders.get(session, order_id)
            if row is None or scope not in (None, row.project_id):
                raise OrderNotFound('no order %s' % order_id)
            return self._read(session, row)

    def _read(self, session, row):
        """The ``Order`` of ``row``, with its steps read in ``session``."""
        repositories = self._database.repositories
        steps = repositories.steps.for_order(session, row.id)
        retries = repositories.retry_tasks.list_tasks(session,
                                                      order_id=row.id)
        return _order(row, _step_states(row.type, steps, retries))

    def find(self, order_id, *, project_id=None, all_projects=False):
        """``get`` by an order id or a prefix of one, as git finds a
        commit: a prefix must start one order's id only.

        :raises OrderNotFound: no order's id starts so.
        :raises AmbiguousOrderId: several do.
        :raises InvalidProjectScope: as ``get``.
        """
        scope = checked(inputs.scope, project_id, all_projects)
        with self._database.reader() as session:
            found = self._full_id(session, order_id, scope)
        return self._get(found, scope)

    def _full_id(self, session, order_id, scope):
        """The id of the one order (of ``scope``, a project id or None)
        whose id is or starts with ``order_id``; raises as ``find``
        does."""
        checked(inputs.check_order_id, order_id)
        found = self._database.queries.orders.ids_starting_with(
            session, order_id, scope)
        if order_id in found or len(found) == 1:
            return order_id if order_id in found else found[0]
        if not found:
            raise OrderNotFound('no order %s' % order_id)
        raise AmbiguousOrderId('%s starts the ids of several orders (%s, '
                               '...); give more of the id'
                               % (order_id, ', '.join(found)))

    def history(self, order_id, *, project_id=None, all_projects=False):
        """The runs of the order's steps that ended (``StepRun``), oldest
        first: every run of every step, its deliveries' too. A run still
        going has none yet (its step's ``owner`` tells).

        :param order_id: an order id, or a prefix of one (as ``find``).
        :raises OrderNotFound: no such order (in ``project_id``).
        :raises AmbiguousOrderId: the prefix starts several ids.
        :raises InvalidProjectScope: as ``get``.
        """
        scope = checked(inputs.scope, project_id, all_projects)
        repositories = self._database.repositories
        with self._database.reader() as session:
            rows = repositories.history.for_order(
                session, self._full_id(session, order_id, scope))
        return tuple(_step_run(row) for row in rows)

    def list(self, *, project_id=None, all_projects=False, status=None,
             order_type=None, limit=100, marker=None, with_meta=True):
        """Return at most ``limit`` orders (without their steps) in
        creation order; the last one's id as ``marker`` gives the next
        page.

        :param with_meta: False: their ``meta`` is not read (it is ``{}``),
            for a listing that does not show it.

        :raises InvalidRequest: ``limit`` is not 1 to ``MAX_LIMIT``, the
            status is not one, or the marker is no order (of the project).
        :raises InvalidProjectScope: as ``get``.
        """
        scope = checked(inputs.scope, project_id, all_projects)
        _check_limit(limit)
        if status is not None and status not in models.ORDER_STATUSES:
            raise InvalidRequest('status must be one of %s, not %s'
                                 % (', '.join(models.ORDER_STATUSES),
                                    _SHORT.repr(status)))
        if order_type is not None:
            _check_text(order_type, 'order_type', MAX_ORDER_TYPE_LENGTH)
        if marker is not None:
            checked(inputs.check_order_id, marker, 'marker')
        repositories = self._database.repositories
        with self._database.reader() as session:
            after = None
            if marker is not None:
                last = repositories.orders.get(session, marker)
                if last is None or scope not in (None, last.project_id):
                    raise InvalidRequest('marker %s is not an order' % (
                        marker,))
                after = (last.created_at, last.id)
            rows = self._database.queries.orders.list_orders(
                session, status, limit, project_id=scope,
                order_type=order_type, after=after, with_meta=with_meta)
        return [_order(row, (), with_meta) for row in rows]

    def cancel(self, order_id, *, project_id=None, all_projects=False,
               reason='cancelled by request'):
        """Cancel a PENDING order and return it.

        Its pending steps never start, the claims of its running steps are
        revoked (their results are discarded) and its retry rows are
        removed. It is CANCELLED, or CANCELLING until its type's
        compensation step has run. Cancelling a cancelled order returns it
        as it is.

        :raises OrderNotFound: no such order (in ``project_id``).
        :raises OrderNotCancellable: the order is ACTIVE or ERROR.
        :raises InvalidProjectScope: as ``get``.
        """
        scope = checked(inputs.scope, project_id, all_projects)
        _check_text(reason, 'reason', MAX_REASON_LENGTH,
                    allow_controls=True)
        order = self._get(order_id, scope)
        if order.status in (CANCELLING, CANCELLED):
            return order
        cancelled = None
        now = self.now()
        if order.status == PENDING:
            cancelled = order_actions.cancel_order(
                self._database, self._worker_api, _workflow(order.type),
                order.id, reason, now,
                request=context_module.of_order(order))
        if cancelled is not None and cancelled.compensation is None:
            # CANCELLED at once; with a compensation step, the worker
            # that ends it announces it.
            self._announce(bus.CANCELLED, [order], CANCELLED, now,
                           reason=reason)
        if cancelled is None:
            # It ended meanwhile, or had ended.
            order = self._get(order_id, scope)
            if order.status in (CANCELLING, CANCELLED):
                return order
            raise OrderNotCancellable('order %s is %s: it has ended and '
                                      'cannot be cancelled'
                                      % (order.id, order.status))
        return self._get(order_id, scope)

    def resume(self, order_id, *, project_id=None, all_projects=False,
               context=None):
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
        :raises OrderNotFound: no such order (in ``project_id``).
        :raises OrderNotResumable: the order is not ERROR.
        :raises InvalidProjectScope: as ``get``.
        """
        scope = checked(inputs.scope, project_id, all_projects)
        _check_context(context)
        return self._resume(order_id, scope, context)

    def _resume(self, order_id, scope, context):
        """``resume`` in ``scope`` (a project id, or None)."""
        order = self._get(order_id, scope)
        if order.status != ERROR:
            raise OrderNotResumable(
                'order %s is %s: only an ERROR order can be resumed'
                % (order.id, order.status))
        request = context_module.of_order(order)
        now = self.now()
        try:
            resumed = order_actions.resume_order(
                self._database, self._worker_api, _workflow(order.type),
                order.id, now, request=request,
                before_cast=lambda: self._announce(
                    bus.RESUMED, [order], PENDING, now))
        except order_actions.NothingToResume as exc:
            raise OrderNotResumable(str(exc)) from None
        if resumed is None:
            LOG.info('Order %s was resumed by another request first',
                     order.id, context=context_module.for_ids(request))
            return self._get(order.id, scope)
        LOG.info('Order %s resumed by %s (it was ERROR: %s); step(s) %s '
                 'start again%s', order.id, _who(context), order.error_reason,
                 ', '.join(step.step for step in resumed.started),
                 ', then %s' % ', '.join(resumed.waiting)
                 if resumed.waiting else '',
                 context=context_module.for_ids(request))
        return self._get(order.id, scope)

    def resume_many(self, *, order_type=None, since=None, project_id=None,
                    all_projects=False, limit=100, context=None):
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
        :returns: a ``BulkResume``.
        :raises InvalidRequest: ``limit`` is not 1 to ``MAX_LIMIT``, or
            ``since`` is not a time.
        :raises InvalidProjectScope: as ``get``.
        """
        scope = checked(inputs.scope, project_id, all_projects)
        _check_limit(limit)
        _check_context(context)
        if order_type is not None:
            _check_text(order_type, 'order_type', MAX_ORDER_TYPE_LENGTH)
        since = _naive_utc(since, 'since')
        with self._database.reader() as session:
            ids = self._database.queries.orders.ids_by_update(
                session, ERROR, limit, since=since, project_id=scope,
                order_type=order_type)
        resumed, failed = [], {}
        for order_id in ids:
            try:
                resumed.append(self._resume(order_id, scope, context))
            except Exception as exc:
                LOG.warning('Order %s could not be resumed: %s', order_id,
                            exc, exc_info=not isinstance(exc,
                                                         OrderAPIError))
                failed[order_id] = str(exc)
        return BulkResume(resumed=tuple(resumed), failed=failed)

    def _announce(self, event_type, orders, status, now, reason=None):
        """Announce on the bus that ``orders`` (rows or ``Order``) moved
        to ``status`` at ``now``, once that committed, and wait a moment
        for it to be sent (``bus.Announcer.flush``): the caller casts the
        orders' steps next, whose workers announce what follows."""
        if self._announcer is None:
            return
        for order in orders:
            self._announcer.order(event_type, order.id, order.project_id,
                                  status, now, reason=reason,
                                  request=context_module.of_order(order))
        self._announcer.flush()

    def wait(self, order_id, *, timeout, project_id=None,
             all_projects=False):
        """Return the ``Order`` once it is ACTIVE, ERROR or CANCELLED.

        Reads the order's status once a second (one probe of the primary
        key), then the whole order once it has ended.

        :param timeout: seconds to wait at most, a finite number from 0 to
            ``MAX_WAIT_SECONDS``.
        :raises Timeout: the order had not ended within ``timeout``; its
            ``order`` attribute is the order as last read.
        :raises OrderNotFound: no such order (in ``project_id``).
        :raises OutOfBounds: ``timeout`` is not such a number.
        :raises InvalidProjectScope: as ``get``.
        """
        scope = checked(inputs.scope, project_id, all_projects)
        with _checking():
            timeout = inputs.check_seconds(timeout, 'timeout',
                                           MAX_WAIT_SECONDS)
        deadline = time.monotonic() + timeout
        order = self._get(order_id, scope)
        status = order.status
        while status not in FINAL_STATUSES:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout('order %s is still %s after %gs'
                              % (order_id, status, timeout),
                              self._get(order_id, scope))
            time.sleep(min(WAIT_INTERVAL_SECONDS, left))
            with self._database.reader() as session:
                status = self._database.repositories.orders.status_of(
                    session, order_id)
            if status is None:
                raise OrderNotFound('order %s was deleted' % order_id)
        return self._get(order_id, scope)


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


def _workflow(order_type):
    _check_text(order_type, 'order_type', MAX_ORDER_TYPE_LENGTH)
    try:
        return order_types.get(order_type)
    except order_types.UnknownOrderType as exc:
        raise UnknownOrderType(str(exc)) from None


def _check_limit(limit):
    with _checking():
        inputs.check_count(limit, 'limit', MAX_LIMIT)


def _who(context):
    """Who a request is, for a log line: its user and request id."""
    if context is None:
        return 'a caller without a request context'
    user = getattr(context, 'user_name', None) or getattr(
        context, 'user_id', None)
    return '%s(request %s)' % ('user %s ' % user if user else '',
                               context.request_id)


def _naive_utc(moment, name):
    """``moment`` as a naive UTC time (a naive one is UTC already), None
    as None; ``name`` is the parameter's, for the error."""
    if moment is None:
        return None
    if not isinstance(moment, datetime.datetime):
        raise InvalidRequest('%s must be a datetime, not %s'
                             % (name, type(moment).__name__))
    if moment.tzinfo is not None:
        try:
            moment = moment.astimezone(datetime.timezone.utc).replace(
                tzinfo=None)
        except (OverflowError, ValueError) as exc:
            # A time near year 1 or 9999 that UTC cannot hold, or a
            # tzinfo that gives no offset.
            raise InvalidRequest('%s has no UTC time: %s'
                                 % (name, exc)) from None
    return moment


def _check_start(not_before, now):
    """Refuse a ``not_before`` more than ``MAX_START_DELAY`` after
    ``now``: a typing mistake (a year 20260 for 2026), not a plan."""
    if not_before is not None and not_before - now > MAX_START_DELAY:
        raise InvalidRequest(
            'not_before must be at most %d days ahead (%s), not %s'
            % (MAX_START_DELAY.days, (now + MAX_START_DELAY).isoformat(
                sep=' ', timespec='seconds'),
               not_before.isoformat(sep=' ', timespec='seconds')))


@contextlib.contextmanager
def _checking():
    """Turn a ``worker.common.inputs.Refused`` into this module's error:
    ``InvalidMeta`` (rule ``json``) for metadata that is not JSON,
    ``InvalidCharacters``, ``InvalidProjectScope`` or ``OutOfBounds``."""
    try:
        yield
    except inputs.NotJSON as exc:
        raise InvalidMeta(exc.field, 'json', str(exc)) from None
    except inputs.BadCharacters as exc:
        raise InvalidCharacters(str(exc), exc.field, exc.bound) from None
    except inputs.BadScope as exc:
        raise InvalidProjectScope(str(exc)) from None
    except inputs.Refused as exc:
        raise OutOfBounds(str(exc), exc.field, exc.bound) from None


def checked(check, *arguments):
    """``check(*arguments)``, a check of ``worker.common.inputs``, its
    refusal raised as this module's error (``InvalidRequest`` kinds).

    Not part of the stable API: the checks that ``worker.schedule_api``
    shares with this module go through it.
    """
    with _checking():
        return check(*arguments)


def _check_text(value, field, max_length, allow_controls=False):
    """``inputs.check_text`` with this module's errors."""
    return checked(inputs.check_text, value, field, max_length,
                   allow_controls)


def _check_project(project_id):
    _check_text(project_id, 'project_id', MAX_PROJECT_ID_LENGTH)


def _check_key(idempotency_key):
    if idempotency_key is not None:
        _check_text(idempotency_key, 'idempotency_key',
                    MAX_IDEMPOTENCY_KEY_LENGTH)


def _check_meta(workflow, meta, conf):
    """Check ``meta``'s bounds (``[api_limits]``), then its type's
    ``meta_schema``: the schema is never run on what is too deep."""
    limits = conf.api_limits
    if not isinstance(meta, dict):
        # The words of jsonschema's "type" failure, as before the
        # bounds; never the value's repr, which could be huge or deep.
        raise InvalidMeta('$', 'type', 'a %s is not of type %r'
                          % (type(meta).__name__, 'object'))
    with _checking():
        inputs.check_meta(meta, limits.max_meta_bytes,
                          limits.max_meta_depth)
    try:
        meta_module.validate_meta(workflow, meta)
    except meta_module.InvalidMeta as exc:
        # jsonschema quotes the value refused, whatever its size.
        raise InvalidMeta(exc.path, exc.rule,
                          _SHORT.repr(exc.reason)[1:-1]) from None


def _check_context(context):
    """A ``RequestContext`` whose request ids the order's columns hold,
    or None."""
    if context is None:
        return
    for field in ('request_id', 'global_request_id'):
        value = getattr(context, field, None)
        if value is not None or field == 'request_id':
            _check_text(value, 'context.%s' % field, MAX_REQUEST_ID_LENGTH)


def _request_hash(order_type, meta, priority, callback_urls, not_before):
    """A fingerprint of what makes a request the same request: kept with
    the key, compared when the key is used again.

    The caller's callback URLs (canonical: ``_canonical_urls``), not the
    operator's ``[notifications] endpoints`` that the order gets too: a
    request retried after the operator changed them is still the same
    request. ``not_before`` only
    when given, so that the fingerprints of requests without it stay
    those their keys were stored with.
    """
    request = {'type': order_type, 'meta': meta, 'priority': priority,
               'callback_urls': sorted(set(callback_urls))}
    if not_before is not None:
        request['not_before'] = not_before.isoformat()
    text = json.dumps(request, sort_keys=True, separators=(',', ':'))
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def _canonical_urls(callback_urls):
    """``callback_urls`` canonical (checked already: none is refused),
    so that two spellings of one receiver are one request."""
    return [targets.canonical(url) for url in callback_urls]


def _order(row, steps, with_meta=True):
    return Order(
        id=row.id, type=row.type, status=row.status,
        project_id=row.project_id,
        meta=dict(row.meta or {}) if with_meta else {},
        priority=row.priority, idempotency_key=row.idempotency_key,
        request_id=row.request_id, global_request_id=row.global_request_id,
        error_reason=row.error_reason, created_at=row.created_at,
        updated_at=row.updated_at, steps=tuple(steps),
        not_before=row.not_before, schedule_id=row.schedule_id)


def _step_run(row):
    return StepRun(step=row.step, attempt=row.attempt, worker=row.worker,
                   started_at=row.started_at, finished_at=row.finished_at,
                   result=row.result, error=row.error,
                   generation=row.generation)


def _new_steps(workflow, deliveries, not_before):
    """The ``StepState`` of each step of an order just created: its first
    steps and its deliveries QUEUED (its first steps RETRYING until
    ``not_before`` if it starts later), the others WAITING."""
    later = set(workflow.roots()) if not_before is not None else set()
    queued = (set(workflow.roots()) - later) | set(deliveries)

    def state(name, after):
        status = ('QUEUED' if name in queued else
                  'RETRYING' if name in later else models.STEP_WAITING)
        return StepState(name=name, after=after, status=status, attempt=0,
                         owner=None, started_at=None, finished_at=None,
                         next_retry_at=not_before if name in later else None,
                         last_error=None)

    return [state(name, after)
            for name, after in [(step.name, tuple(step.after))
                                for step in workflow.steps] +
            [(name, ()) for name in sorted(deliveries)]]


def _step_states(order_type, rows, retries):
    """The ``StepState`` of each step of an order, in declared order."""
    try:
        workflow = order_types.get(order_type)
    except order_types.UnknownOrderType:
        workflow = None
    by_step = order_actions.retry_rows_by_step(retries)
    after = {}
    if workflow is not None:
        after = {step.name: tuple(step.after) for step in workflow.steps}
    states = []
    for name, row in order_actions.in_declared_order(workflow, rows):
        retry = by_step.get(name)
        states.append(StepState(
            name=name, after=after.get(name, ()),
            status=order_actions.step_status(row, retry),
            attempt=row.attempt, owner=row.owner,
            started_at=row.started_at, finished_at=row.finished_at,
            next_retry_at=(retry.retry_at if retry and not retry.parked
                           else None),
            last_error=row.last_error, crashes=row.crashes,
            waiting_for=retry.waiting_for if retry else None))
    return states
