"""The queries of the API and the operator commands, as narrower
``typing.Protocol``s beside the repository contract.

``worker.db.interfaces`` is the contract of what the worker and the retry
daemon call: the SQL modules and the in-memory fake implement it, and
``tests/functional/repositories`` holds both to it. What only the front
door (``worker.api``) and the operator commands
(``scheduler.manage``) call is here: the same SQL modules implement it,
the fake does not, and those callers run on a real database (their unit
tests on SQLite). A new API or operator query is one function in its SQL
module and one signature here.

``Database.queries`` (``worker.db.session``) hands these out, as
``Database.repositories`` hands out the contract's.
"""

import collections.abc as abc
import dataclasses
import datetime
import typing

from worker.db import bulk_orders
from worker.db import console_sessions
from worker.db import meta_search
from worker.db import notifications
from worker.db import orders
from worker.db import quotas
from worker.db import retry_tasks
from worker.db import rows
from worker.db import schedules
from worker.db import signals
from worker.db import steps

Any = typing.Any
Moment = datetime.datetime


class OrderQueries(typing.Protocol):
    """``worker.db.orders``: the API's and operator commands' reads and
    status moves of orders."""

    def ids_starting_with(self, session: Any, prefix: str,
                          project_id: str | None = None,
                          limit: int = 2) -> list[str]:
        """Up to ``limit`` ids of orders that start with ``prefix``."""

    def list_orders(self, session: Any, status: str | None = None,
                    limit: int | None = None, *,
                    project_id: str | None = None,
                    order_type: str | None = None,
                    after: tuple[Moment, str] | None = None,
                    with_meta: bool = True,
                    created_from: Moment | None = None,
                    created_to: Moment | None = None,
                    idempotency_key: str | None = None,
                    meta: abc.Sequence[meta_search.MetaFilter] = ()
                    ) -> list[rows.Order]:
        """Orders, oldest first, filtered (``meta``: equality on paths
        of their metadata); those ``after`` a page's last ``(created_at,
        id)``; without their meta if not ``with_meta``."""

    def count_orders(self, session: Any, *, cap: int,
                     status: str | None = None,
                     project_id: str | None = None,
                     order_type: str | None = None,
                     created_from: Moment | None = None,
                     created_to: Moment | None = None,
                     idempotency_key: str | None = None) -> int:
        """How many orders ``list_orders`` selects, up to ``cap``."""

    def count_by_status(self, session: Any) -> dict[str, int]:
        """``{status: count}`` over every order."""

    def count_unfinished_by_type(self, session: Any) -> dict[str, int]:
        """``{type: count}`` of the orders not in a terminal status."""

    def count_by_status_and_type(self, session: Any,
                                 project_id: str | None = None
                                 ) -> dict[tuple[str, str], int]:
        """``{(status, type): count}`` (of ``project_id`` only)."""

    def times_since(self, session: Any, since: Moment, *,
                    finished: bool = False, project_id: str | None = None,
                    limit: int = 10000) -> list[Moment]:
        """Creation (or completion) times since ``since``, newest first."""
    def count_unfinished_by_version(
            self, session: Any) -> dict[tuple[str, str | None], int]:
        """``{(type, workflow_version): count}`` of the orders not in a
        terminal status."""

    def unfinished_graphs_without_version(
            self, session: Any) -> dict[tuple[str, frozenset[str]], int]:
        """``{(type, step names): count}`` of the unfinished orders
        without a workflow version."""

    def resume(self, session: Any, order_id: str, now: Moment) -> bool:
        """Move an ERROR order back to PENDING, its reason cleared."""

    def ids_by_update(self, session: Any, status: str, limit: int, *,
                      since: Moment | None = None,
                      project_id: str | None = None,
                      order_type: str | None = None) -> list[str]:
        """Up to ``limit`` ids of orders in ``status``, by ``updated_at``,
        changed at or after ``since``."""

    def cancel(self, session: Any, order_id: str, now: Moment, reason: str,
               compensating: bool) -> bool:
        """Move a PENDING order to CANCELLING or CANCELLED."""


class StepQueries(typing.Protocol):
    """``worker.db.steps``: the API's writes of steps (resume, cancel)."""

    def restart(self, session: Any, order_id: str,
                start: abc.Collection[str], wait: abc.Collection[str],
                now: Moment) -> dict[str, int]:
        """Steps of a resumed order run again from scratch, ``start``
        PENDING and dispatched, ``wait`` WAITING; their new generations.
        """

    def add(self, session: Any, order_id: str, step: str,
            now: Moment) -> None:
        """Insert one more step, PENDING and dispatched at ``now``."""


class RetryTaskQueries(typing.Protocol):
    """``worker.db.retry_tasks``: the API's and operator commands' reads
    and requeues of retry rows."""

    def count_later(self, session: Any, now: Moment) -> int:
        """Count the unparked rows due after ``now``."""

    def get(self, session: Any, task_id: int) -> rows.RetryTask | None:
        """The retry row with this id, or None."""

    def requeue(self, session: Any, task_id: int, now: Moment) -> bool:
        """Make a row due at ``now``, unparked; False if there is none."""


class NotificationQueries(typing.Protocol):
    """``worker.db.notifications``: the operator commands' resealing,
    re-enabling and resuming of URLs."""

    def replace_secrets(self, session: Any, url_id: int,
                        old: tuple[str | None, str | None],
                        new: tuple[str | None, str | None]) -> bool:
        """Write ``new`` (secret, previous secret) if the URL's are still
        ``old``; False if they changed meanwhile."""

    def enable_url(self, session: Any, url_id: int, now: Moment) -> None:
        """Make the URL available again."""

    def resume(self, session: Any, url_id: int,
               order_ids: abc.Collection[str] | None, now: Moment) -> None:
        """Make the URL's waiting deliveries of ``order_ids`` PENDING."""


class ScheduleQueries(typing.Protocol):
    """``worker.db.schedules``: the schedules the API reads and deletes."""

    def get(self, session: Any, schedule_id: str) -> rows.Schedule | None:
        """The schedule with this id, or None."""

    def list_schedules(self, session: Any, project_id: str | None = None
                       ) -> list[rows.Schedule]:
        """Every schedule (of ``project_id`` only), oldest first."""

    def delete(self, session: Any, schedule_id: str) -> bool:
        """Delete the schedule; False if there was none."""

    def record_order(self, session: Any, schedule_id: str, tick: Moment,
                     order_id: str, now: Moment) -> bool:
        """Record a triggered order as the schedule's last."""


class QuotaQueries(typing.Protocol):
    """``worker.db.quotas``: the admin's overrides of the per-project
    quotas (what a create counts is in the contract, ``Quotas``)."""

    def overrides(self, session: Any) -> list[rows.ProjectQuota]:
        """The rows with an override, by project id."""

    def set_override(self, session: Any, project_id: str,
                     pending_orders: int | None, now: Moment) -> bool:
        """Set or clear the override; False without a row."""


class ConsoleSessionQueries(typing.Protocol):
    """``worker.db.console_sessions``: the operator console's logins."""

    def insert(self, session: Any, values: dict) -> None:
        """Add a login."""

    def get_live(self, session: Any, session_id: str,
                 now: Moment) -> rows.ConsoleSession | None:
        """The login if it has not expired at ``now``."""

    def delete(self, session: Any, session_id: str) -> bool:
        """End the login; False if there was none."""

    def delete_expired(self, session: Any, now: Moment,
                       limit: int = 100) -> int:
        """Delete up to ``limit`` expired logins; how many went."""


class SignalQueries(typing.Protocol):
    """``worker.db.signals``: the front door's writes and reads of the
    signals sent to an order."""

    def find(self, session: Any, order_id: str,
             signal_id: str) -> rows.OrderSignal | None:
        """The order's signal sent with ``signal_id``, or None."""

    def add(self, session: Any, order_id: str, signal_id: str, name: str,
            payload: Any, now: Moment) -> rows.OrderSignal:
        """Insert a signal; ``DBDuplicateEntry`` if its id is taken."""

    def hold_steps(self, session: Any, order_id: str,
                   names: abc.Collection[str]) -> list[rows.Step]:
        """These steps' rows, held until the transaction ends."""

    def for_order(self, session: Any,
                  order_id: str) -> list[rows.OrderSignal]:
        """Every signal of the order, oldest first."""


class BulkOrderQueries(typing.Protocol):
    """``worker.db.bulk_orders``: the orders a bulk action selects, and
    its writes that no single-order command has."""

    def batch_after(self, session: Any, selection: bulk_orders.Selection,
                    after: str | None, limit: int) -> list[Any]:
        """Up to ``limit`` orders of the selection (their id, type,
        project and request ids), by id, after ``after``."""

    def count(self, session: Any, selection: bulk_orders.Selection,
              limit: int | None = None) -> int:
        """How many orders the selection holds (up to ``limit``)."""

    def cancel_many(self, session: Any, order_ids: abc.Collection[str],
                    now: Moment, reason: str,
                    compensating: abc.Collection[str]) -> list[str]:
        """Cancel the PENDING ones, their steps and retry rows; their ids.
        """

    def set_priority_many(self, session: Any, order_ids: abc.Collection[str],
                          statuses: abc.Collection[str], priority: int,
                          now: Moment) -> list[str]:
        """Set the priority of the orders still in ``statuses`` and of
        their retry rows; the ids changed."""


@dataclasses.dataclass(frozen=True)
class Queries:
    """One narrower repository per aggregate the front door and the
    operator commands read or write beyond the contract."""

    orders: OrderQueries
    steps: StepQueries
    retry_tasks: RetryTaskQueries
    notifications: NotificationQueries
    schedules: ScheduleQueries
    quotas: QuotaQueries
    console_sessions: ConsoleSessionQueries
    signals: SignalQueries
    bulk_orders: BulkOrderQueries


SQL = Queries(orders=orders, steps=steps, retry_tasks=retry_tasks,
              notifications=notifications, schedules=schedules,
              quotas=quotas, console_sessions=console_sessions,
              signals=signals, bulk_orders=bulk_orders)
