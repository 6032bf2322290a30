"""What each repository offers, as one ``typing.Protocol`` per aggregate.

Both implementations satisfy these: the SQL repositories, modules of
functions (``worker.db.locks``, ``orders``, ``steps``, ``retry_tasks``,
``history``, ``services``, ``notifications``, ``purge``), and the in-memory
fake's
objects of methods (``worker.db.memory``). ``repositories.Repositories``
types its fields with them, so that mypy checks each implementation
against its protocol where the two are put together, and what callers
read through ``database.repositories.X`` is typed.

One module for the seven, not one per aggregate: a protocol is the list
of a repository's signatures, and the repository module itself (next to
it in ``worker/db``) says what each call does; the seven together are
the contract that ``tests/functional/repositories`` holds the fake to.
That is also why it may pass 400 lines: the contract read in one place.

The contract is the size of its users: what the worker and the retry
daemon call (with the order creation the daemon's ticks reach through
``worker.schedule_api``), and the few reads (``orders.get``,
``retry_tasks.list_tasks``, ``history.for_order``,
``notifications.events_of_order``, ``paused``) and set-ups
(``set_secret``, ``set_owner``, ``locks.force_release``) through which
the contract tests and the daemons' unit tests see what the fake wrote.
What only the API and the operator commands call is in
``worker.db.queries``, not faked.

The session is ``typing.Any`` here: the SQL functions take a SQLAlchemy
``orm.Session`` and the fake's an in-memory session, and a protocol's
parameter must accept what each implementation's does. Rows are the
protocols of ``worker.db.rows``.
"""

import collections.abc as abc
import datetime
import typing

from worker.db import orders
from worker.db import pauses
from worker.db import resources
from worker.db import retry_tasks
from worker.db import rows
from worker.db import steps
from worker.order_types import base as order_types
from worker import values

Any = typing.Any
Moment = datetime.datetime
#: ``(order_id, step)``.
StepKey = steps.Key


class Locks(typing.Protocol):
    """``worker.db.locks``: entity locks, fenced by their owner token."""

    def get(self, session: Any, entity: str) -> rows.Lock | None:
        """The lock row of ``entity``, or None."""

    def insert(self, session: Any, entity: str, host: str,
               owner_token: str, now: Moment) -> None:
        """Take the lock; ``DBDuplicateEntry`` if it is held."""

    def renew(self, session: Any, entity: str, owner_token: str,
              now: Moment) -> bool:
        """Extend our own lock; False if we no longer hold it."""

    def take_over(self, session: Any, entity: str, host: str,
                  owner_token: str, now: Moment,
                  older_than: Moment) -> bool:
        """Take the lock if last taken or renewed before ``older_than``.
        """

    def release(self, session: Any, entity: str, owner_token: str) -> bool:
        """Delete our own lock; False if we no longer held it."""

    def hold(self, session: Any, entity: str, now: Moment) -> bool:
        """Lock the row of ``entity`` until the transaction ends; False if
        there is no such row."""

    def force_release(self, session: Any, entity: str) -> bool:
        """Delete the lock whoever holds it; True if there was one."""


class Orders(typing.Protocol):
    """``worker.db.orders``: orders and their status moves."""

    def create(self, session: Any, workflow: order_types.Workflow,
               meta: abc.Mapping[str, Any] | None, now: Moment,
               priority: int = 0,
               origin: orders.Origin = orders.NO_ORIGIN,
               not_before: Moment | None = None) -> rows.Order:
        """Insert a PENDING order of ``workflow``'s type, and its steps
        (its first ones not dispatched if it starts ``not_before``);
        ``DBDuplicateEntry`` if its project has its idempotency key."""

    def find_by_key(self, session: Any, project_id: str,
                    idempotency_key: str) -> rows.Order | None:
        """The project's order created with ``idempotency_key``, or None.
        """

    def status_of(self, session: Any, order_id: str) -> str | None:
        """The order's status, or None if there is no such order."""

    def with_steps_many(
            self, session: Any, order_ids: abc.Collection[str]
    ) -> dict[str, tuple[rows.Order, dict[str, rows.Step]]]:
        """``{order_id: (order, {name: step})}`` of those that exist."""

    def retry_origins(self, session: Any, order_ids: abc.Collection[str]
                      ) -> dict[str, orders.RetryOrigin]:
        """``{id: RetryOrigin}`` (priority, request ids) of those of
        ``order_ids`` that exist."""

    def count_pending(self, session: Any, order_type: str) -> int:
        """How many orders of ``order_type`` are PENDING."""

    def count_unfinished_by_status(self, session: Any) -> dict[str, int]:
        """``{status: count}`` of the orders not in a terminal status."""

    def lock_live(self, session: Any, order_id: str, now: Moment) -> bool:
        """Lock a PENDING or CANCELLING order; False if it is not live."""

    def complete_many(
            self, session: Any,
            completions: abc.Iterable[
                tuple[str, abc.Mapping[str, Any] | None]],
            now: Moment) -> int:
        """Complete several orders; how many moved to ACTIVE."""

    def fail(self, session: Any, order_id: str, now: Moment,
             reason: str) -> bool:
        """Move a PENDING order to ERROR with ``reason``."""

    def end_cancel(self, session: Any, order_id: str, now: Moment,
                   failure: str | None = None) -> bool:
        """Move a CANCELLING order to CANCELLED."""

    def get(self, session: Any, order_id: str) -> rows.Order | None:
        """The order with this id, or None."""


#: The tuples of the batch calls, as ``worker.db.steps`` declares them.
Claim = steps.Claim
Retry = steps.Retry
Finish = steps.Finish
Delivery = steps.Delivery
Start = steps.Start
Release = steps.Release


class Steps(typing.Protocol):
    """``worker.db.steps``: steps, their writes fenced by generation."""

    def create(self, session: Any, order_id: str,
               names: abc.Iterable[str], roots: abc.Container[str],
               now: Moment, dispatched: bool = True) -> None:
        """Insert the steps ``names``; the ``roots`` PENDING (dispatched
        at ``now`` unless ``dispatched`` is False)."""

    def for_order(self, session: Any,
                  order_id: str) -> dict[str, rows.Step]:
        """``{name: step}`` of one order."""

    def claim_many(self, session: Any, claims: abc.Collection[Claim],
                   now: Moment, owner: str) -> set[StepKey]:
        """Claim several steps; the ``(order_id, step)`` claimed."""

    def retry_many(self, session: Any, retries: abc.Iterable[Retry],
                   now: Moment) -> int:
        """Release several steps; how many were."""

    def release_many(self, session: Any, releases: abc.Iterable[Release],
                     now: Moment) -> int:
        """Give back steps claimed and never run; how many were."""

    def finish_many(self, session: Any, finishes: abc.Iterable[Finish],
                    now: Moment) -> int:
        """End several steps; how many were."""

    def start_many(self, session: Any, starts: abc.Iterable[Start],
                   now: Moment) -> None:
        """Start the steps of several orders."""

    def revoke_open(self, session: Any, order_id: str, now: Moment,
                    reason: str) -> list[str]:
        """Cancel the open steps of the workflow; their names."""

    def record_delivery_many(self, session: Any,
                             deliveries: abc.Iterable[Delivery],
                             now: Moment) -> int:
        """Write several deliveries' runs; how many were."""

    def mark_dispatched(self, session: Any, keys: abc.Collection[StepKey],
                        now: Moment) -> None:
        """Record that unclaimed PENDING steps were cast at ``now``."""

    def lost_dispatches(self, session: Any, dispatched_before: Moment,
                        limit: int) -> list[steps.RecoveryRow]:
        """Steps cast before ``dispatched_before`` that no worker took."""

    def owners(self, session: Any) -> set[str]:
        """The distinct owners of claimed steps."""

    def owned_by(self, session: Any, dead_owners: abc.Collection[str],
                 limit: int) -> list[steps.RecoveryRow]:
        """Steps claimed by one of ``dead_owners``."""

    def expired_leases(self, session: Any, ended_before: Moment,
                       limit: int) -> list[steps.RecoveryRow]:
        """Claimed steps whose lease ended before ``ended_before``."""

    def extend_lease(self, session: Any, order_id: str, step: str,
                     token: int, owner: str, now: Moment,
                     lease_until: Moment) -> bool:
        """Move a running step's lease, if the run still holds it."""

    def take_back(self, session: Any, order_id: str, step: str,
                  generation: int, now: Moment,
                  failed: str | None = None, crashed: bool = False) -> bool:
        """Take a lost step back: bump its token, no owner."""


class RetryTasks(typing.Protocol):
    """``worker.db.retry_tasks``: retry rows and the scheduler's reads."""

    def add_many(self, session: Any,
                 rows: abc.Collection[abc.Mapping[str, Any]]) -> None:
        """Insert retry rows (dicts of ``retry_tasks._row``'s arguments).
        """

    def due(self, session: Any, now: Moment, limit: int,
            after: tuple[int, Moment, int] | None = None,
            traces: bool = False) -> list[retry_tasks.DueTask]:
        """Up to ``limit`` due rows, highest priority first (with their
        orders' ``trace_context`` if ``traces``)."""

    def any_due(self, session: Any, now: Moment) -> bool:
        """True if an unparked row is due at ``now``."""

    def next_due_after(self, session: Any,
                       moment: Moment) -> Moment | None:
        """The earliest ``retry_at`` after ``moment``, or None."""

    def count_due(self, session: Any, now: Moment) -> int:
        """Count the unparked rows due at ``now``."""

    def count_parked(self, session: Any) -> int:
        """Count the parked rows."""

    def delete_for_order(self, session: Any, order_id: str,
                         step: str | None = None) -> None:
        """Delete the rows of one order's workflow, or of one step."""

    def delete_for_steps(self, session: Any,
                         keys: abc.Collection[StepKey]) -> None:
        """Delete the retry rows of these steps."""

    def delete_as_read(self, session: Any,
                       rows: abc.Collection[retry_tasks.DueTask]
                       ) -> set[StepKey]:
        """Delete rows as read, by id; the steps of those deleted."""

    def park(self, session: Any, row: retry_tasks.DueTask,
             reason: str) -> None:
        """Set a row (as read, by id) aside."""

    def list_tasks(self, session: Any, parked: bool | None = None,
                   order_id: str | None = None) -> list[rows.RetryTask]:
        """Retry rows by retry_at, filtered on the arguments."""


class Resources(typing.Protocol):
    """``worker.db.resources``: resource slots, rate starts, waits."""

    def held(self, session: Any,
             keys: abc.Collection[str]) -> dict[str, set[int]]:
        """``{key: {slot, ...}}`` held now."""

    def take(self, session: Any, key: str, slot: int,
             holder: resources.Holder, now: Moment) -> bool:
        """Take a slot for a run; False if another run holds it."""

    def give_back(self, session: Any,
                  slots: abc.Collection[resources.Slot]) -> None:
        """Delete slots taken in this transaction."""

    def release(self, session: Any, holders: abc.Collection[
            resources.Holder]) -> dict[str, int]:
        """Free the slots of these runs; ``{key: freed}``."""

    def orphans(self, session: Any, limit: int) -> list[resources.Slot]:
        """Slots whose holder no longer runs."""

    def sweep(self, session: Any, limit: int) -> dict[str, int]:
        """Free slots whose holder no longer runs; ``{key: freed}``."""

    def undispatch(self, session: Any,
                   steps: abc.Collection[resources.Holder],
                   now: Moment) -> int:
        """Mark unowned PENDING steps not in flight; how many."""

    def waiting(self, session: Any, key: str,
                limit: int) -> list[retry_tasks.DueTask]:
        """The oldest retry rows waiting for a slot of ``key``."""

    def make_due(self, session: Any, freed: abc.Mapping[str, int],
                 now: Moment) -> int:
        """Make the oldest rows waiting for the keys freed due now."""

    def starts(self, session: Any, key: str) -> dict[int, Moment]:
        """``{slot: started_at}`` of a key's start rows."""

    def add_starts(self, session: Any, key: str,
                   slots: abc.Collection[int]) -> None:
        """Make start rows of a key, last used long ago."""

    def take_start(self, session: Any, key: str, slot: int, now: Moment,
                   free_before: Moment) -> bool:
        """Use a start row last used at or before ``free_before``."""

    def give_back_start(self, session: Any, key: str, slot: int,
                        now: Moment, started_at: Moment) -> None:
        """Undo ``take_start`` of this transaction."""


class History(typing.Protocol):
    """``worker.db.history``: the runs of an order's steps."""

    def add_many(self, session: Any,
                 runs: abc.Collection[rows.StepRun]) -> None:
        """Add a row for each run, its error cut short."""

    def for_order(self, session: Any, order_id: str) -> list[rows.StepRun]:
        """The order's runs, oldest first."""


class Services(typing.Protocol):
    """``worker.db.services``: service heartbeats."""

    def heartbeat(self, session: Any, name: str, kind: str, host: str,
                  pid: int, now: Moment,
                  clock_offset: float | None = None,
                  topic: str | None = None) -> None:
        """Record that ``name`` (serving ``topic``) is alive at ``now``."""

    def database_time(self, session: Any) -> Moment:
        """The database server's UTC time now (naive)."""

    def record_pass(self, session: Any, name: str, last_pass_at: Moment,
                    next_pass_at: Moment | None) -> None:
        """Record when a retry daemon passed and will pass next."""

    def remove(self, session: Any, name: str) -> None:
        """Delete the row of ``name``."""

    def live_names(self, session: Any, alive_since: Moment,
                   kind: str | None = None) -> set[str]:
        """Names (of ``kind``) whose heartbeat is not before it."""

    def any_dead(self, session: Any, alive_since: Moment) -> bool:
        """True if a heartbeat is before ``alive_since``."""

    def delete_dead(self, session: Any, alive_since: Moment) -> list[str]:
        """Delete rows with a heartbeat before it; their names."""

    def list_services(self, session: Any,
                      kind: str | None = None) -> list[rows.Service]:
        """The service rows (of ``kind``), by kind then name."""


class Notifications(typing.Protocol):
    """``worker.db.notifications``: URLs, events and deliveries."""

    def find_url(self, session: Any, url: str) -> rows.Url | None:
        """The row of ``url``, or None."""

    def add_url(self, session: Any, url: str, now: Moment) -> rows.Url:
        """Insert ``url``, available; its row."""

    def get_urls(self, session: Any,
                 url_ids: abc.Collection[int]) -> dict[int, rows.Url]:
        """``{id: row}`` of those of ``url_ids`` that exist."""

    def list_urls(self, session: Any) -> list[rows.Url]:
        """Every URL, by id."""

    def url_failed(self, session: Any, url_id: int, now: Moment,
                   error: str, disable: bool) -> None:
        """Count a failed request; ``disable``: make it unavailable."""

    def url_succeeded_many(self, session: Any,
                           url_ids: abc.Collection[int]) -> None:
        """Requests to these URLs were acknowledged: their failures
        start again."""

    def hold_url(self, session: Any, url_id: int, now: Moment) -> bool:
        """Write the URL's row; True if it is available."""

    def count_unavailable_urls(self, session: Any) -> int:
        """How many URLs are unavailable."""

    def lock_orders(self, session: Any, order_ids: abc.Collection[str],
                    now: Moment) -> None:
        """Hold the orders' rows for this transaction."""

    def deliveries_of_orders(self, session: Any,
                             order_ids: abc.Collection[str]
                             ) -> dict[str, dict[str, tuple[str, int, bool]]]:
        """``{order_id: {name: (status, generation, waiting)}}`` in one
        read; ``waiting``: its first run waits."""

    def add_events_many(self, session: Any,
                        events: abc.Mapping[str, abc.Sequence[
                            values.Event]],
                        now: Moment) -> dict[str, list[int]]:
        """Append each order's events at once; their sequences."""

    def last_sequences(self, session: Any,
                       order_ids: abc.Collection[str]) -> dict[str, int]:
        """``{order_id: last sequence}`` of the orders with events."""

    def events_after_many(self, session: Any, after: abc.Mapping[str, int],
                          limit: int) -> dict[str, list[rows.Event]]:
        """Each order's events after ``after[order_id]``, up to ``limit``.
        """

    def wake_many(self, session: Any, order_ids: abc.Collection[str],
                  now: Moment) -> None:
        """Make every finished delivery of ``order_ids``, and every one
        whose first run waits, PENDING."""

    def count_open_deliveries(self, session: Any) -> dict[str, int]:
        """``{status: count}`` of the deliveries PENDING and WAITING."""

    def set_secret(self, session: Any, url_id: int, secret: str,
                   previous_until: Moment | None, now: Moment) -> None:
        """Give the URL a new secret; with ``previous_until``, the one it
        had also signs until then."""

    def set_owner(self, session: Any, url_id: int, project_id: str | None,
                  now: Moment) -> None:
        """Make ``project_id`` the only project whose orders may name the
        URL; None: any project's."""

    def paused(self, session: Any, url_id: int,
               limit: int) -> list[tuple[str, int]]:
        """``[(order_id, generation)]`` waiting for the URL."""

    def events_of_order(self, session: Any,
                        order_id: str) -> list[rows.Event]:
        """Every event of the order, in sequence."""


class Purge(typing.Protocol):
    """``worker.db.purge``: finished orders and their rows, by age."""

    def select_batch(self, session: Any, statuses: abc.Collection[str],
                     before: Moment, limit: int) -> list[str]:
        """Up to ``limit`` ids of orders in ``statuses`` last changed
        before ``before``, oldest first."""

    def delete(self, session: Any, order_ids: abc.Collection[str],
               statuses: abc.Collection[str],
               before: Moment) -> rows.PurgeCounts:
        """Delete those of ``order_ids`` still in ``statuses`` and old,
        with their rows in every table; the counts per table."""

    def count(self, session: Any, statuses: abc.Collection[str],
              before: Moment) -> rows.PurgeCounts:
        """What a purge would delete now, per table."""


class Quotas(typing.Protocol):
    """``worker.db.quotas``: what a create counts against its project's
    quota (``worker.api.quotas``), which the retry daemon's schedule
    ticks create through too."""

    def get(self, session: Any, project_id: str) -> rows.ProjectQuota | None:
        """The project's row, or None."""

    def insert(self, session: Any, project_id: str,
               pending_orders: int | None, now: Moment) -> None:
        """Add the project's row; raises ``DBDuplicateEntry`` if it
        exists."""

    def hold(self, session: Any, project_id: str, now: Moment) -> bool:
        """Hold the project's row until the transaction ends; False
        without a row."""

    def count_pending(self, session: Any, project_id: str) -> int:
        """Count the project's PENDING orders."""


class Schedules(typing.Protocol):
    """``worker.db.schedules``: orders created on a schedule."""

    def create(self, session: Any, project_id: str, order_type: str,
               meta: abc.Mapping[str, Any], priority: int,
               every_seconds: int | None, cron: str | None,
               next_tick_at: Moment, now: Moment, timezone: str = 'UTC',
               overlap: str = 'allow') -> rows.Schedule:
        """Insert a schedule whose first tick is ``next_tick_at``."""

    def due(self, session: Any, now: Moment,
            limit: int) -> list[rows.Schedule]:
        """Up to ``limit`` schedules due at ``now``, most overdue first."""

    def next_tick_at(self, session: Any) -> Moment | None:
        """The earliest ``next_tick_at``, or None."""

    def advance(self, session: Any, schedule_id: str, read: Moment,
                following: Moment, now: Moment, tick: Moment | None = None,
                order_id: str | None = None) -> bool:
        """Move ``next_tick_at`` from ``read`` to ``following``; False if
        it is no longer ``read``."""

    def hold(self, session: Any, schedule_id: str, read: Moment,
             following: Moment, now: Moment, tick: Moment) -> bool:
        """``advance``, holding ``tick`` until the open order ends."""

    def held(self, session: Any, limit: int) -> list[rows.Schedule]:
        """Up to ``limit`` schedules holding a tick, oldest tick first."""

    def release_held(self, session: Any, schedule_id: str, tick: Moment,
                     now: Moment, order_id: str | None) -> bool:
        """Forget the held ``tick``, recording ``order_id`` as the last;
        False if it is no longer held."""


class Signals(typing.Protocol):
    """``worker.db.signals``: the signals a step sees, consumes and is
    woken by."""

    def unconsumed_many(self, session: Any, order_ids: abc.Collection[str],
                        names: abc.Collection[str]
                        ) -> dict[str, list[rows.OrderSignal]]:
        """``{order_id: [signal]}`` not consumed, of ``names``, oldest
        first."""

    def consume(self, session: Any, order_id: str, step: str,
                ids: abc.Collection[int], now: Moment) -> int:
        """Mark the signals ``ids`` consumed by ``step``; how many."""

    def wake(self, session: Any, order_id: str, step: str,
             names: abc.Collection[str], after_id: int, now: Moment) -> bool:
        """Move the step's retry row due at ``now`` if a signal of
        ``names`` above ``after_id`` waits; True if it did."""


class Pauses(typing.Protocol):
    """``worker.db.pauses``: what operators paused."""

    def any_paused(self, session: Any) -> bool:
        """Whether anything is paused."""

    def matching(self, session: Any,
                 order_ids: abc.Collection[str]) -> list[pauses.Pause]:
        """Every pause but those of orders, and those of these orders."""

    def listed(self, session: Any, target: str | None = None,
               names: abc.Collection[str] | None = None
               ) -> list[pauses.Pause]:
        """The pauses, oldest first, of ``target`` and ``names``."""

    def add_many(self, session: Any, target: str,
                 names: abc.Collection[str], reason: str | None,
                 now: Moment,
                 project_ids: abc.Mapping[str, str | None] | None = None
                 ) -> list[str]:
        """Pause those of ``names`` not paused yet; returns them."""

    def remove_many(self, session: Any, target: str,
                    names: abc.Collection[str]) -> list[pauses.Pause]:
        """Lift the pauses of ``names`` of ``target``; returns them."""

    def census(self, session: Any,
               before: Moment) -> dict[str, tuple[int, int]]:
        """``{target: (paused, paused before before)}``."""
