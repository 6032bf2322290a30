"""Service heartbeats, on every backend."""

from tests.functional.repositories.shared import contract
from tests.functional.repositories.shared import plus
from tests.functional.repositories.shared import read
from tests.functional.repositories.shared import write
from worker.db import models


@contract
def test_services(db):
    services = db.repositories.services
    write(db, services.heartbeat, 'w1@h', models.WORKER, 'h', 1, plus(0),
          topic='barbican_retry_worker')
    write(db, services.heartbeat, 'w1@h', 'other', 'other', 9, plus(5))
    write(db, services.heartbeat, 'w2@h', models.WORKER, 'h', 2, plus(1),
          topic='slow')
    write(db, services.heartbeat, 'r1@h', models.SCHEDULER, 'h', 3, plus(5))
    write(db, services.record_pass, 'r1@h', plus(5), plus(65))
    write(db, services.record_pass, 'gone@h', plus(5), plus(65))

    [row] = read(db, services.list_services, models.SCHEDULER)
    assert (row.name, row.kind, row.host, row.pid, row.started_at,
            row.heartbeat_at, row.last_pass_at, row.next_pass_at,
            row.topic) == (
        'r1@h', models.SCHEDULER, 'h', 3, plus(5), plus(5), plus(5), plus(65),
        None)
    [row, other] = read(db, services.list_services, models.WORKER)
    assert (row.name, row.kind, row.pid, row.started_at, row.heartbeat_at,
            row.last_pass_at, row.topic) == (
        'w1@h', models.WORKER, 1, plus(0), plus(5), None,
        'barbican_retry_worker')
    assert other.topic == 'slow'
    assert [s.name for s in read(db, services.list_services)] == [
        'r1@h', 'w1@h', 'w2@h']

    assert read(db, services.live_names, plus(5)) == {'w1@h', 'r1@h'}
    assert read(db, services.live_names, plus(1),
                kind=models.WORKER) == {'w1@h', 'w2@h'}
    assert read(db, services.any_dead, plus(2))
    assert not read(db, services.any_dead, plus(1))
    assert write(db, services.delete_dead, plus(2)) == ['w2@h']
    assert write(db, services.delete_dead, plus(2)) == []
    write(db, services.remove, 'r1@h')
    write(db, services.remove, 'gone@h')
    assert [s.name for s in read(db, services.list_services)] == ['w1@h']
