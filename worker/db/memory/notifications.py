"""``worker.db.notifications`` on the in-memory store."""

import collections
import collections.abc as abc
import copy
import datetime
import typing
import uuid

from oslo_db import exception as db_exc

from worker.db.memory import base
from worker.db import models
from worker.db import rows
from worker import values

Session = base.InMemorySession
Moment = datetime.datetime


class InMemoryNotifications(base.Repository):
    """``worker.db.notifications`` on the in-memory store."""

    def _url_by_hash(self, url: str) -> rows.Url | None:
        digest = models.url_hash(url)
        for row in self._store.urls.values():
            if row.url_hash == digest:
                return row
        return None

    @base.reads
    def find_url(self, session: Session, url: str) -> rows.Url | None:
        """The URL's row, or None."""
        return copy.deepcopy(self._url_by_hash(url))

    @base.writes
    def add_url(self, session: Session, url: str, now: Moment) -> rows.Url:
        """Insert ``url``, available; returns its row."""
        if self._url_by_hash(url) is not None:
            raise db_exc.DBDuplicateEntry(columns=['url_hash'])
        row = base.UrlRecord(id=next(self._store.url_ids), url=url,
                             url_hash=models.url_hash(url),
                             available=True, failures=0, last_error=None,
                             last_failure_at=None, disabled_at=None,
                             created_at=now, updated_at=now)
        self._store.urls[row.id] = row
        return copy.deepcopy(row)

    @base.reads
    def _get_url(self, session: Session, url_id: int) -> rows.Url | None:
        """The URL's row, or None."""
        return copy.deepcopy(self._store.urls.get(url_id))

    @base.reads
    def get_urls(self, session: Session,
                 url_ids: abc.Collection[int]) -> dict[int, rows.Url]:
        """``{id: row}`` of those of ``url_ids`` that exist."""
        return {url_id: row for url_id in url_ids
                for row in (self._get_url(session, url_id),)
                if row is not None}

    @base.reads
    def list_urls(self, session: Session) -> list[rows.Url]:
        """Every URL, by id."""
        return copy.deepcopy(sorted(self._store.urls.values(),
                                    key=lambda row: row.id))

    def _update_url(self, url_id: int,
                    **values: typing.Any) -> rows.Url | None:
        row = self._store.urls.get(url_id)
        if row is not None:
            self._store.urls[url_id] = base.replace(row, **values)
        return row

    @base.writes
    def set_secret(self, session: Session, url_id: int, secret: str,
                   previous_until: Moment | None, now: Moment) -> None:
        """Give the URL a new secret; with ``previous_until``, the one it
        had also signs until then."""
        row = self._store.urls.get(url_id)
        if row is None:
            return
        kept = row.secret if previous_until is not None else None
        self._update_url(url_id, secret=secret, previous_secret=kept,
                         previous_secret_until=previous_until,
                         updated_at=now)

    @base.writes
    def set_owner(self, session: Session, url_id: int,
                  project_id: str | None, now: Moment) -> None:
        """Make ``project_id`` the URL's only project; None: global."""
        self._update_url(url_id, project_id=project_id, updated_at=now)

    @base.writes
    def url_failed(self, session: Session, url_id: int, now: Moment,
                   error: str, disable: bool) -> None:
        """Count a failed request; ``disable``: make it unavailable."""
        row = self._store.urls.get(url_id)
        if row is None:
            return
        values: dict[str, typing.Any] = dict(
            failures=row.failures + 1, last_error=error,
            last_failure_at=now, updated_at=now)
        if disable:
            values.update(available=False,
                          disabled_at=row.disabled_at or now)
        self._update_url(url_id, **values)

    @base.writes
    def _url_succeeded(self, session: Session, url_id: int) -> None:
        """A request was acknowledged: its failures start again."""
        row = self._store.urls.get(url_id)
        if row is not None and row.failures > 0:
            self._update_url(url_id, failures=0)

    def url_succeeded_many(self, session: Session,
                           url_ids: abc.Collection[int]) -> None:
        """``_url_succeeded`` of each URL."""
        for url_id in url_ids:
            self._url_succeeded(session, url_id)

    @base.writes
    def hold_url(self, session: Session, url_id: int, now: Moment) -> bool:
        """Touch the URL's row; True if it is available."""
        row = self._update_url(url_id, updated_at=now)
        return bool(row and row.available)

    @base.reads
    def count_unavailable_urls(self, session: Session) -> int:
        """How many URLs are unavailable."""
        return sum(not row.available for row in self._store.urls.values())

    @base.writes
    def _lock_order(self, session: Session, order_id: str,
                    now: Moment) -> None:
        """Touch the order's ``updated_at``, as the SQL update does
        (transactions are serialized anyway)."""
        order = self._store.orders.get(order_id)
        if order is not None:
            self._store.orders[order_id] = base.replace(
                order, updated_at=now)

    def lock_orders(self, session: Session, order_ids: abc.Collection[str],
                    now: Moment) -> None:
        """``_lock_order`` of each order."""
        for order_id in order_ids:
            self._lock_order(session, order_id, now)

    @base.reads
    def deliveries_of_orders(self, session: Session,
                             order_ids: abc.Collection[str]
                             ) -> dict[str, dict[str, tuple[str, int, bool]]]:
        """``{order_id: {name: (status, generation, waiting)}}``; an order
        without deliveries is left out."""
        wanted = set(order_ids)
        found: dict[str, dict[str, tuple[str, int, bool]]] = {}
        for step in self._store.steps.values():
            if step.order_id in wanted and models.is_delivery(step.name):
                found.setdefault(step.order_id, {})[step.name] = (
                    step.status, step.generation, _first_run_waits(step))
        return found

    @base.writes
    def add_events_many(self, session: Session,
                        events: abc.Mapping[str, abc.Sequence[
                            values.Event]],
                        now: Moment) -> dict[str, list[int]]:
        """Append ``events[order_id]`` to each order's; their sequences.
        """
        sequences: dict[str, list[int]] = {}
        for order_id, found in events.items():
            if found and order_id not in self._store.orders:
                raise base.missing_order('notification_events')
            last = self._last(order_id)
            sequences[order_id] = []
            for offset, event in enumerate(found, 1):
                row = base.EventRecord(
                    id=None, event_id=str(uuid.uuid4()), order_id=order_id,
                    sequence=last + offset, event=event.event,
                    status=event.status, step=event.step,
                    detail=base.to_json(event.detail), created_at=now)
                self._store.events[order_id, row.sequence] = row
                sequences[order_id].append(row.sequence)
        return sequences

    def _last(self, order_id: str) -> int:
        return max((sequence for key, sequence in self._store.events
                    if key == order_id), default=0)

    @base.reads
    def last_sequences(self, session: Session,
                       order_ids: abc.Collection[str]) -> dict[str, int]:
        """``{order_id: last sequence}``; an order without events is left
        out."""
        return {order_id: last for order_id in order_ids
                for last in (self._last(order_id),) if last}

    @base.reads
    def _events_after(self, session: Session, order_id: str, sequence: int,
                      limit: int | None) -> list[rows.Event]:
        """The order's events after ``sequence``, up to ``limit``."""
        return copy.deepcopy(sorted(
            (row for (key, number), row in self._store.events.items()
             if key == order_id and number > sequence),
            key=lambda row: row.sequence)[:limit])

    @base.reads
    def events_after_many(self, session: Session,
                          after: abc.Mapping[str, int],
                          limit: int) -> dict[str, list[rows.Event]]:
        """``{order_id: its events after after[order_id], up to limit}``.
        """
        return {order_id: self._events_after(session, order_id, sequence,
                                             limit)
                for order_id, sequence in after.items()}

    def events_of_order(self, session: Session,
                        order_id: str) -> list[rows.Event]:
        """Every event of the order, in sequence."""
        return self._events_after(session, order_id, 0, None)

    @base.writes
    def wake_many(self, session: Session, order_ids: abc.Collection[str],
                  now: Moment) -> None:
        """Make every finished delivery of ``order_ids``, and every one
        whose first run waits, PENDING and dispatched at ``now``."""
        for order_id, found in self.deliveries_of_orders(
                session, order_ids).items():
            for name, (status, _, waiting) in found.items():
                if status == models.STEP_DONE or waiting:
                    step = self._store.steps[order_id, name]
                    self._store.steps[order_id, name] = base.replace(
                        step, status=models.STEP_PENDING,
                        dispatched_at=now, updated_at=now, finished_at=None)

    @base.reads
    def paused(self, session: Session, url_id: int,
               limit: int) -> list[tuple[str, int]]:
        """``[(order_id, generation)]`` of the deliveries waiting for the
        URL, up to ``limit``."""
        name = models.delivery_name(url_id)
        return sorted((step.order_id, step.generation)
                      for step in self._store.steps.values()
                      if step.name == name and
                      step.status == models.STEP_WAITING)[:limit]

    @base.reads
    def count_open_deliveries(self, session: Session) -> dict[str, int]:
        """``{status: count}`` of the deliveries PENDING and WAITING."""
        return dict(collections.Counter(
            step.status for step in self._store.steps.values()
            if models.is_delivery(step.name) and
            step.status in base.OPEN))


def _first_run_waits(step: typing.Any) -> bool:
    """A delivery whose first run waits: never claimed, never cast."""
    return (step.status == models.STEP_PENDING and step.attempt == 0 and
            step.dispatched_at is None and step.owner is None)
