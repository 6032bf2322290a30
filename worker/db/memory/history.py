"""``worker.db.history`` on the in-memory store."""

import collections.abc as abc

from worker.db import history
from worker.db.memory import base
from worker.db import rows

Session = base.InMemorySession


class InMemoryHistory(base.Repository):
    """``worker.db.history`` on the in-memory store."""

    @base.writes
    def add_many(self, session: Session,
                 runs: abc.Collection[rows.StepRun]) -> None:
        """Add a row for each run, its error cut short."""
        if any(run.order_id not in self._store.orders for run in runs):
            raise base.missing_order('order_step_runs')
        for run in runs:
            run_id = next(self._store.run_ids)
            self._store.runs[run_id] = run._replace(
                id=run_id, error=history.bounded(run.error))

    @base.reads
    def for_order(self, session: Session,
                  order_id: str) -> list[rows.StepRun]:
        """The order's runs, oldest first."""
        return [run for _, run in sorted(self._store.runs.items())
                if run.order_id == order_id]
