"""Schedules: creation, reads, the due ones and their conditional
advance, on every backend."""

from tests.functional.repositories.shared import contract
from tests.functional.repositories.shared import plus
from tests.functional.repositories.shared import read
from tests.functional.repositories.shared import sql_contract
from tests.functional.repositories.shared import write


def _schedule(db, at, next_tick, project='p1', every=60, cron=None):
    return write(db, db.repositories.schedules.create, project,
                 'certificate', {'pair': (1, 2)}, 3, every, cron,
                 next_tick, at)


@sql_contract
def test_create_get_list_and_delete(db):
    first = _schedule(db, plus(1), plus(61))
    second = _schedule(db, plus(2), plus(5), project='p2', every=None,
                       cron='*/5 * * * *')
    got = read(db, db.queries.schedules.get, first.id)
    assert (got.project_id, got.type, got.meta, got.priority,
            got.every_seconds, got.cron, got.next_tick_at, got.last_tick_at,
            got.last_order_id, got.created_at, got.updated_at) == (
        'p1', 'certificate', {'pair': [1, 2]}, 3, 60, None, plus(61), None,
        None, plus(1), plus(1))
    assert read(db, db.queries.schedules.get, 'missing') is None
    assert read(db, db.queries.schedules.get, second.id).cron == '*/5 * * * *'
    assert [s.id for s in read(db, db.queries.schedules.list_schedules)] == [
        first.id, second.id]
    assert [s.id for s in read(db, db.queries.schedules.list_schedules,
                               project_id='p2')] == [second.id]

    assert write(db, db.queries.schedules.delete, first.id)
    assert not write(db, db.queries.schedules.delete, first.id)
    assert [s.id for s in read(
        db, db.queries.schedules.list_schedules)] == [second.id]


@contract
def test_due_schedules_most_overdue_first_and_bounded(db):
    schedules = db.repositories.schedules
    assert read(db, schedules.next_tick_at) is None
    late = _schedule(db, plus(0), plus(10))
    later = _schedule(db, plus(0), plus(20))
    _schedule(db, plus(0), plus(30))
    assert read(db, schedules.due, plus(9), 10) == []
    assert [s.id for s in read(db, schedules.due, plus(20), 10)] == [
        late.id, later.id]
    assert [s.id for s in read(db, schedules.due, plus(40), 1)] == [late.id]
    assert read(db, schedules.next_tick_at) == plus(10)


@sql_contract
def test_advance_is_conditional_on_the_tick_read(db):
    schedules = db.repositories.schedules
    schedule = _schedule(db, plus(0), plus(10))
    # Another daemon read an older tick: it moves nothing.
    assert not write(db, schedules.advance, schedule.id, plus(9), plus(70),
                     plus(11), plus(9), 'order-0')
    assert write(db, schedules.advance, schedule.id, plus(10), plus(70),
                 plus(11), plus(10), 'order-1')
    # The second of two daemons that read the same tick.
    assert not write(db, schedules.advance, schedule.id, plus(10), plus(70),
                     plus(12), plus(10), 'order-2')
    got = read(db, db.queries.schedules.get, schedule.id)
    assert (got.next_tick_at, got.last_tick_at, got.last_order_id,
            got.updated_at) == (plus(70), plus(10), 'order-1', plus(11))
    # A skipped tick moves on and keeps the last order.
    assert write(db, schedules.advance, schedule.id, plus(70), plus(130),
                 plus(71))
    got = read(db, db.queries.schedules.get, schedule.id)
    assert (got.next_tick_at, got.last_tick_at, got.last_order_id) == (
        plus(130), plus(10), 'order-1')
    write(db, db.queries.schedules.delete, schedule.id)
    assert not write(db, schedules.advance, schedule.id, plus(130),
                     plus(190), plus(131))


@sql_contract
def test_time_zone_and_overlap_are_kept_and_default_to_utc_and_allow(db):
    zoned = write(db, db.repositories.schedules.create, 'p1', 'certificate',
                  {}, 0, None, '30 2 * * *', plus(10), plus(0),
                  timezone='America/New_York', overlap='buffer-one')
    plain = _schedule(db, plus(0), plus(10))
    got = read(db, db.queries.schedules.get, zoned.id)
    assert (got.timezone, got.overlap, got.buffered_tick_at) == (
        'America/New_York', 'buffer-one', None)
    got = read(db, db.queries.schedules.get, plain.id)
    assert (got.timezone, got.overlap) == ('UTC', 'allow')


@contract
def test_a_held_tick_is_held_read_and_released_once(db):
    schedules = db.repositories.schedules
    schedule = _schedule(db, plus(0), plus(10))
    other = _schedule(db, plus(0), plus(10))
    assert read(db, schedules.held, 10) == []
    # Held by the daemon that read the tick; not by one that read older.
    assert not write(db, schedules.hold, schedule.id, plus(9), plus(70),
                     plus(11), plus(10))
    assert write(db, schedules.hold, schedule.id, plus(10), plus(70),
                 plus(11), plus(10))
    # A newer tick replaces the held one.
    assert write(db, schedules.hold, schedule.id, plus(70), plus(130),
                 plus(71), plus(70))
    [held] = read(db, schedules.held, 10)
    assert (held.id, held.buffered_tick_at, held.next_tick_at) == (
        schedule.id, plus(70), plus(130))
    assert read(db, schedules.held, 10)[0].id != other.id
    # Released once: the second daemon that read it finds it gone.
    assert not write(db, schedules.release_held, schedule.id, plus(10),
                     plus(72), 'order-1')
    assert write(db, schedules.release_held, schedule.id, plus(70),
                 plus(72), 'order-1')
    assert not write(db, schedules.release_held, schedule.id, plus(70),
                     plus(73), 'order-2')
    assert read(db, schedules.held, 10) == []
    [released] = [found for found in read(db, schedules.due, plus(130), 10)
                  if found.id == schedule.id]
    assert (released.last_tick_at, released.last_order_id,
            released.buffered_tick_at) == (plus(70), 'order-1', None)


@sql_contract
def test_a_triggered_order_is_recorded_as_the_last(db):
    schedule = _schedule(db, plus(0), plus(60))
    assert write(db, db.queries.schedules.record_order, schedule.id,
                 plus(5), 'order-t', plus(5))
    got = read(db, db.queries.schedules.get, schedule.id)
    assert (got.last_tick_at, got.last_order_id, got.next_tick_at) == (
        plus(5), 'order-t', plus(60))
    assert not write(db, db.queries.schedules.record_order, 'missing',
                     plus(5), 'order-t', plus(5))
