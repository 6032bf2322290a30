"""The read side of ``worker.api.OrderAPI``: get, find, history, list
and wait.

``OrderQueries`` reads ``self._database`` (a
``worker.db.session.Database``) and nothing else; ``OrderAPI`` builds
on it and adds the writes. Every read is one reader transaction that
returns values (``worker.api.values``), never rows.
"""

import dataclasses
import time
import typing

from oslo_log import log as logging

from worker.api import checks
from worker.api import errors
from worker.api import meta_filters as filters_module
from worker.api import pausing
from worker.api import values
from worker.common import inputs
from worker import context as context_module
from worker import values as worker_values

LOG = logging.getLogger(__name__)

#: How often ``wait`` reads the order's status: one probe of the primary
#: key per waiter per second at most.
WAIT_INTERVAL_SECONDS = 1.0
#: The largest ``cap`` of ``count``: the index entries one count may read.
MAX_COUNT_CAP = 100000


class OrderQueries:
    """Read orders; the base of ``OrderAPI``, whose ``__init__`` sets
    the database it reads."""

    _database: typing.Any
    _conf: typing.Any

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
        return self._get(order_id, checks.scope(project_id, all_projects))

    def _get(self, order_id, scope):
        """``get`` in ``scope`` (a project id, or None for every
        project)."""
        checks.check_order_id(order_id)
        with self._database.reader() as session:
            row = self._database.repositories.orders.get(session, order_id)
            if row is None or scope not in (None, row.project_id):
                raise errors.OrderNotFound('no order %s' % order_id)
            return self._read(session, row)

    def _read(self, session, row):
        """The ``Order`` of ``row``, with its steps read in ``session``."""
        repositories = self._database.repositories
        steps = repositories.steps.for_order(session, row.id)
        retries = repositories.retry_tasks.list_tasks(session,
                                                      order_id=row.id)
        order = values.order_of(row, values.step_states(
            row.type, steps, retries, row.workflow_version))
        paused_by = pausing.paused_by(
            self._conf, repositories.pauses.matching(session, [row.id]),
            row, [retry.waiting_for for retry in retries])
        return dataclasses.replace(order, paused_by=paused_by) \
            if paused_by else order

    def find(self, order_id, *, project_id=None, all_projects=False):
        """``get`` by an order id or a prefix of one, as git finds a
        commit: a prefix must start one order's id only.

        :raises OrderNotFound: no order's id starts so.
        :raises AmbiguousOrderId: several do.
        :raises InvalidProjectScope: as ``get``.
        """
        scope = checks.scope(project_id, all_projects)
        with self._database.reader() as session:
            found = self._full_id(session, order_id, scope)
        return self._get(found, scope)

    def _full_id(self, session, order_id, scope):
        """The id of the one order (of ``scope``, a project id or None)
        whose id is or starts with ``order_id``; raises as ``find``
        does."""
        checks.check_order_id(order_id)
        found = self._database.queries.orders.ids_starting_with(
            session, order_id, scope)
        if order_id in found or len(found) == 1:
            return order_id if order_id in found else found[0]
        if not found:
            raise errors.OrderNotFound('no order %s' % order_id)
        raise errors.AmbiguousOrderId(
            '%s starts the ids of several orders (%s, ...); give more of '
            'the id' % (order_id, ', '.join(found)))

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
            raise errors.IdempotencyConflict(
                'idempotency key %r of project %s was used for order %s by '
                'a different request (its type, meta, priority or callback '
                'URLs differ); nothing was created'
                % (origin.idempotency_key, origin.project_id, row.id),
                row.id)
        LOG.info('Order %s exists for idempotency key %r; returned it',
                 row.id, origin.idempotency_key,
                 context=context_module.for_ids(
                     worker_values.request_ids_of(row)))
        return order

    def history(self, order_id, *, project_id=None, all_projects=False):
        """The runs of the order's steps that ended (``StepRun``), oldest
        first: every run of every step, its deliveries' too. A run still
        going has none yet (its step's ``owner`` tells).

        :param order_id: an order id, or a prefix of one (as ``find``).
        :raises OrderNotFound: no such order (in ``project_id``).
        :raises AmbiguousOrderId: the prefix starts several ids.
        :raises InvalidProjectScope: as ``get``.
        """
        scope = checks.scope(project_id, all_projects)
        repositories = self._database.repositories
        with self._database.reader() as session:
            rows = repositories.history.for_order(
                session, self._full_id(session, order_id, scope))
        return tuple(values.step_run_of(row) for row in rows)

    def list(self, *, project_id=None, all_projects=False, status=None,
             order_type=None, limit=100, marker=None, with_meta=True,
             created_from=None, created_to=None, idempotency_key=None,
             meta=None):
        """Return at most ``limit`` orders (without their steps) in
        creation order; the last one's id as ``marker`` gives the next
        page.

        :param with_meta: False: their ``meta`` is not read (it is ``{}``),
            for a listing that does not show it.
        :param created_from: only those created at or after this
            ``datetime`` (naive: UTC).
        :param created_to: only those created before this one.
        :param idempotency_key: only those created with this key.
        :param meta: ``{'path.to.key': value}``: only the orders whose
            metadata holds each value (a JSON scalar) at its dotted path,
            of the same JSON type (``worker.api.meta_filters``).

        :raises InvalidRequest: ``limit`` is not 1 to ``MAX_LIMIT``, the
            status is not one, the marker is no order (of the project),
            or a meta filter is not one.
        :raises OutOfBounds: the meta filters are beyond their bounds.
        :raises InvalidProjectScope: as ``get``.
        """
        scope, filters = self._filters(project_id, all_projects, limit,
                                       status, order_type, created_from,
                                       created_to, idempotency_key)
        meta_filters = filters_module.check(meta)
        if marker is not None:
            checks.check_order_id(marker, 'marker')
        repositories = self._database.repositories
        with self._database.reader() as session:
            after = None
            if marker is not None:
                last = repositories.orders.get(session, marker)
                if last is None or scope not in (None, last.project_id):
                    raise errors.InvalidRequest('marker %s is not an order'
                                                % (marker,))
                after = (last.created_at, last.id)
            rows = self._database.queries.orders.list_orders(
                session, limit=limit, after=after, with_meta=with_meta,
                meta=meta_filters, **filters)
        return [values.order_of(row, (), with_meta) for row in rows]

    def count(self, *, cap, project_id=None, all_projects=False,
              status=None, order_type=None, created_from=None,
              created_to=None, idempotency_key=None):
        """How many orders ``list`` selects with the same filters, counted
        up to ``cap`` (``cap`` itself means "``cap`` or more"), so that a
        count costs what it shows, not what is stored.

        :raises InvalidRequest: as ``list``; ``cap`` is not 1 to
            ``MAX_COUNT_CAP``.
        :raises InvalidProjectScope: as ``get``.
        """
        checks.checked(inputs.check_count, cap, 'cap', MAX_COUNT_CAP)
        _scope, filters = self._filters(project_id, all_projects, 1,
                                        status, order_type, created_from,
                                        created_to, idempotency_key)
        with self._database.reader() as session:
            return self._database.queries.orders.count_orders(
                session, cap=cap, **filters)

    @staticmethod
    def _filters(project_id, all_projects, limit, status, order_type,
                 created_from, created_to, idempotency_key):
        """The checked scope, and the filters of ``list_orders``."""
        scope = checks.selection(project_id, all_projects, limit,
                                 order_type)
        checks.check_status(status)
        checks.check_key(idempotency_key)
        return scope, {
            'status': status or None, 'project_id': scope,
            'order_type': order_type or None,
            'created_from': checks.naive_utc(created_from, 'created_from'),
            'created_to': checks.naive_utc(created_to, 'created_to'),
            'idempotency_key': idempotency_key}

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
        scope = checks.scope(project_id, all_projects)
        timeout = checks.checked(inputs.check_seconds, timeout, 'timeout',
                                 checks.MAX_WAIT_SECONDS)
        deadline = time.monotonic() + timeout
        status = self._get(order_id, scope).status
        while status not in values.FINAL_STATUSES:
            left = deadline - time.monotonic()
            if left <= 0:
                raise errors.Timeout('order %s is still %s after %gs'
                                     % (order_id, status, timeout),
                                     self._get(order_id, scope))
            time.sleep(min(WAIT_INTERVAL_SECONDS, left))
            with self._database.reader() as session:
                status = self._database.repositories.orders.status_of(
                    session, order_id)
            if status is None:
                raise errors.OrderNotFound('order %s was deleted'
                                           % order_id)
        return self._get(order_id, scope)
