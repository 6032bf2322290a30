"""Ending the work of one deleted project: ``ProjectCleanup``."""

import dataclasses

from oslo_log import log as logging

from worker import api
from worker.api import schedules as schedule_api

LOG = logging.getLogger(__name__)

#: Orders read per ``OrderAPI.list`` call.
PAGE_SIZE = 100
#: The ``error_reason`` of an order cancelled here.
REASON = 'its project %s was deleted in Keystone'


@dataclasses.dataclass(frozen=True)
class Cleanup:
    """What ``ProjectCleanup.project_deleted`` did."""

    project_id: str
    #: The orders this call cancelled (not those already ended or
    #: cancelled by another listener meanwhile).
    orders_cancelled: int
    schedules_deleted: int


class ProjectCleanup:
    """Cancels a project's PENDING orders and deletes its schedules.

    Idempotent: a second call for the same project finds nothing to do,
    and two listeners handling the same project at once each skip what
    the other did first.

    :param orders: a ``worker.api.OrderAPI``.
    :param schedules: a ``worker.schedule_api.ScheduleAPI``.
    """

    def __init__(self, orders, schedules):
        self._orders = orders
        self._schedules = schedules

    def project_deleted(self, project_id):
        """End the work of ``project_id``; returns the ``Cleanup``.

        Schedules first, so that no tick makes a new order after its
        project's orders were cancelled.

        :raises worker.api.InvalidRequest: ``project_id`` cannot be a
            project (too long, control characters).
        """
        schedules = self._delete_schedules(project_id)
        orders = self._cancel_orders(project_id)
        return Cleanup(project_id, orders, schedules)

    def _delete_schedules(self, project_id):
        deleted = 0
        for schedule in self._schedules.list(project_id=project_id):
            try:
                self._schedules.delete(schedule.id, project_id=project_id)
            except schedule_api.ScheduleNotFound:
                continue
            deleted += 1
        return deleted

    def _cancel_orders(self, project_id):
        """Cancel page by page. A cancelled order leaves the PENDING
        listing, so each page is read from the start; an order seen
        before and still PENDING (its cancel kept failing) ends the loop
        instead of being read for ever."""
        cancelled = 0
        seen = set()
        while True:
            page = [order for order in self._orders.list(
                project_id=project_id, status=api.PENDING,
                limit=PAGE_SIZE, with_meta=False) if order.id not in seen]
            if not page:
                return cancelled
            for order in page:
                seen.add(order.id)
                cancelled += self._cancel(order.id, project_id)

    def _cancel(self, order_id, project_id):
        """1 if this call cancelled the order; 0 if it had ended or gone
        meanwhile."""
        try:
            self._orders.cancel(order_id, project_id=project_id,
                                reason=REASON % project_id)
        except (api.OrderNotFound, api.OrderNotCancellable) as exc:
            LOG.debug('Order %s of deleted project %s not cancelled: %s',
                      order_id, project_id, exc)
            return 0
        return 1
