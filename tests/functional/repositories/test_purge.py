"""The purge of old finished orders and their rows, on every backend."""

import pytest
import sqlalchemy as sa

from tests.functional.repositories.shared import contract
from tests.functional.repositories.shared import new_order
from tests.functional.repositories.shared import NOW
from tests.functional.repositories.shared import plus
from tests.functional.repositories.shared import read
from tests.functional.repositories.shared import REQUEST
from tests.functional.repositories.shared import sql_contract
from tests.functional.repositories.shared import write
from tests import singular
from worker.db import models
from worker.db import rows
from worker.notifications import events

FINISHED = models.PURGEABLE_STATUSES
# Orders changed at plus(10) are purged by a cut-off at CUTOFF, those
# changed at plus(100) are not.
CUTOFF = plus(50)


def _add_run(db, order_id):
    """A row of the order's history (``order_step_runs``)."""
    write(db, db.repositories.history.add_many, [rows.StepRun(
        order_id, REQUEST, 1, 1, '1@h', NOW, plus(1), models.RUN_DONE)])


def _order(db, end, at):
    """An order with one row in every child table, then ``end``ed at
    ``at``: its steps (two of its type, a delivery), a retry row, two
    events, a run. Returns its id."""
    repositories = db.repositories
    order_id = new_order(db)
    delivery = models.delivery_name(1)
    write(db, repositories.steps.create, order_id, [delivery], {delivery},
          NOW)
    write(db, singular.on(repositories.retry_tasks).add_retry, order_id,
          delivery, plus(5))
    # Two: the order's own, then order.end.
    write(db, singular.on(repositories.notifications).add_events, order_id,
          events.status_changed(models.ACTIVE), NOW)
    _add_run(db, order_id)
    if end is not None:
        assert write(db, end, order_id, at)
    return order_id


def _ends(db):
    """``{name: end(order_id, at)}``: each way an order ends, or not.

    Cancelling is the API's write (``worker.db.queries``): SQL only.
    """
    orders, queries = db.repositories.orders, db.queries.orders
    return {
        models.ACTIVE: lambda session, order_id, at: singular.complete(
            orders, session, order_id, at, {}),
        models.ERROR: lambda session, order_id, at: orders.fail(
            session, order_id, at, 'failed'),
        models.CANCELLED: lambda session, order_id, at: queries.cancel(
            session, order_id, at, 'cancelled', compensating=False),
        models.CANCELLING: lambda session, order_id, at: queries.cancel(
            session, order_id, at, 'cancelled', compensating=True),
    }


#: The rows of one order of ``_order``.
ONE = rows.PurgeCounts(1, 3, 1, 2, 1)


def _rows_of(db, order_id):
    """The rows the order has in each table, as ``PurgeCounts``."""
    store = db.repositories
    runs = (len([run for run in db._store.runs.values()
                 if run.order_id == order_id]) if db.engine is None else
            _count_runs(db, order_id))
    return rows.PurgeCounts(
        int(read(db, store.orders.get, order_id) is not None),
        len(read(db, store.steps.for_order, order_id)),
        len([task for task in read(db, store.retry_tasks.list_tasks)
             if task.order_id == order_id]),
        len(read(db, store.notifications.events_of_order, order_id)),
        runs)


def _count_runs(db, order_id):
    runs = models.OrderStepRun.__table__
    with db.engine.connect() as connection:
        return connection.execute(
            sa.select(sa.func.count()).select_from(runs)
            .where(runs.c.order_id == order_id)).scalar_one()


@sql_contract
def test_only_finished_orders_older_than_the_cutoff_go_with_their_rows(db):
    purge = db.repositories.purge
    ends = _ends(db)
    old = {status: _order(db, ends[status], plus(10)) for status in FINISHED}
    kept = [_order(db, None, NOW),  # PENDING, the oldest of all
            _order(db, ends[models.CANCELLING], plus(10)),
            _order(db, ends[models.ACTIVE], plus(100))]

    assert read(db, purge.count, FINISHED, CUTOFF) == rows.PurgeCounts(
        *(3 * field for field in ONE.__dict__.values()))
    assert read(db, purge.count, [models.ERROR], CUTOFF) == ONE
    assert read(db, purge.count, FINISHED, plus(10)) == rows.PurgeCounts()

    # A batch at a time: in the order of the statuses given, oldest first.
    first = read(db, purge.select_batch, FINISHED, CUTOFF, 2)
    assert first == [old[models.ACTIVE], old[models.ERROR]]
    assert write(db, purge.delete, first, FINISHED, CUTOFF) == \
        ONE + ONE
    second = read(db, purge.select_batch, FINISHED, CUTOFF, 2)
    assert second == [old[models.CANCELLED]]
    assert write(db, purge.delete, second, FINISHED, CUTOFF) == ONE
    assert read(db, purge.select_batch, FINISHED, CUTOFF, 2) == []

    for order_id in old.values():
        assert _rows_of(db, order_id) == rows.PurgeCounts()
    for order_id in kept:
        assert _rows_of(db, order_id) == ONE
    # The kept ones are not deleted, even when named.
    assert write(db, purge.delete, kept, FINISHED, CUTOFF) == \
        rows.PurgeCounts()
    assert write(db, purge.delete, [], FINISHED, CUTOFF) == \
        rows.PurgeCounts()


@sql_contract
def test_statuses_select_what_is_purged(db):
    purge = db.repositories.purge
    ends = _ends(db)
    error = _order(db, ends[models.ERROR], plus(10))
    active = _order(db, ends[models.ACTIVE], plus(10))

    assert read(db, purge.select_batch, [models.ERROR], CUTOFF, 10) == [
        error]
    assert write(db, purge.delete, [error, active], [models.ERROR],
                 CUTOFF) == ONE
    assert _rows_of(db, active) == ONE


@contract
@pytest.mark.parametrize('statuses', [[models.PENDING],
                                      [models.ACTIVE, models.CANCELLING],
                                      []])
def test_unfinished_statuses_are_refused(db, statuses):
    purge = db.repositories.purge
    with pytest.raises(ValueError, match='only finished orders'):
        read(db, purge.select_batch, statuses, CUTOFF, 10)
    with pytest.raises(ValueError, match='only finished orders'):
        write(db, purge.delete, ['x'], statuses, CUTOFF)
    with pytest.raises(ValueError, match='only finished orders'):
        read(db, purge.count, statuses, CUTOFF)


@sql_contract
def test_an_order_resumed_after_it_was_chosen_keeps_every_row(db):
    purge = db.repositories.purge
    ends = _ends(db)
    resumed = _order(db, ends[models.ERROR], plus(10))
    other = _order(db, ends[models.ERROR], plus(11))

    chosen = read(db, purge.select_batch, FINISHED, CUTOFF, 10)
    assert chosen == [resumed, other]
    # Resumed at an old moment still: its status alone keeps it.
    assert write(db, db.queries.orders.resume, resumed, plus(12))

    assert write(db, purge.delete, chosen, FINISHED, CUTOFF) == ONE
    assert _rows_of(db, resumed) == ONE
    assert _rows_of(db, other) == rows.PurgeCounts()
