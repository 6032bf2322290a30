"""``worker.db.signals``'s contract (``interfaces.Signals``) on the
in-memory store, and ``add`` for the unit tests that send signals."""

import collections.abc as abc
import datetime
import typing

from oslo_db import exception as db_exc

from worker.db.memory import base
from worker.db import rows

Session = base.InMemorySession
Moment = datetime.datetime


class InMemorySignals(base.Repository):
    """``worker.db.signals`` on the in-memory store."""

    @base.reads
    def unconsumed_many(self, session: Session,
                        order_ids: abc.Collection[str],
                        names: abc.Collection[str]
                        ) -> dict[str, list[rows.OrderSignal]]:
        """The unconsumed signals of ``names`` per order, oldest first."""
        found: dict[str, list[rows.OrderSignal]] = {}
        for key in sorted(self._store.signals):
            signal = self._store.signals[key]
            if signal.order_id in order_ids and signal.name in names and \
                    signal.consumed_at is None:
                found.setdefault(signal.order_id, []).append(signal)
        return found

    @base.writes
    def consume(self, session: Session, order_id: str, step: str,
                ids: abc.Collection[int], now: Moment) -> int:
        """Mark the signals ``ids`` consumed by ``step``; how many."""
        consumed = 0
        for key in ids:
            signal = self._store.signals.get(key)
            if signal is not None and signal.order_id == order_id and \
                    signal.consumed_at is None:
                self._store.signals[key] = base.replace(
                    signal, consumed_at=now, consumed_by=step)
                consumed += 1
        return consumed

    @base.writes
    def wake(self, session: Session, order_id: str, step: str,
             names: abc.Collection[str], after_id: int, now: Moment) -> bool:
        """Move the step's waiting retry row due at ``now`` if a signal
        of ``names`` above ``after_id`` waits unconsumed."""
        if not any(signal.order_id == order_id and signal.name in names and
                   signal.consumed_at is None and signal.id > after_id
                   for signal in self._store.signals.values()):
            return False
        woken = False
        for task in list(self._store.tasks.values()):
            if (task.order_id, task.retry_task) == (order_id, step) and \
                    not task.parked and task.waiting_for is None and \
                    task.retry_at > now:
                self._store.tasks[task.id] = base.replace(task,
                                                          retry_at=now)
                woken = True
        return woken

    @base.writes
    def add(self, session: Session, order_id: str, signal_id: str,
            name: str, payload: typing.Any, now: Moment) -> rows.OrderSignal:
        """Insert a signal (as ``worker.db.signals.add``)."""
        if order_id not in self._store.orders:
            raise base.missing_order('order_signals')
        if any((signal.order_id, signal.signal_id) == (order_id, signal_id)
               for signal in self._store.signals.values()):
            raise db_exc.DBDuplicateEntry(['order_id', 'signal_id'])
        signal = base.SignalRecord(
            id=next(self._store.signal_ids), order_id=order_id,
            signal_id=signal_id, name=name, payload=base.to_json(payload),
            created_at=now)
        self._store.signals[signal.id] = signal
        return signal
