"""Entity locks, on every backend."""

from oslo_db import exception as db_exc
import pytest

from tests.functional.repositories.shared import contract
from tests.functional.repositories.shared import plus
from tests.functional.repositories.shared import read
from tests.functional.repositories.shared import write
from worker.db import models


@contract
def test_locks(db):
    locks = db.repositories.locks
    lock = models.ORDER_RETRY_TASK_LOCK
    assert read(db, locks.get, lock) is None

    write(db, locks.insert, lock, 'r1@h', 'token-1', plus(1))
    with pytest.raises(db_exc.DBDuplicateEntry):
        write(db, locks.insert, lock, 'r2@h', 'token-2', plus(2))
    got = read(db, locks.get, lock)
    assert (got.entity_to_lock, got.worker_host_name, got.owner_token,
            got.created_at) == (lock, 'r1@h', 'token-1', plus(1))

    assert not write(db, locks.renew, lock, 'token-2', plus(3))
    assert write(db, locks.renew, lock, 'token-1', plus(4))
    assert read(db, locks.get, lock).created_at == plus(4)
    assert not write(db, locks.release, lock, 'token-2')
    assert write(db, locks.release, lock, 'token-1')
    assert not write(db, locks.release, lock, 'token-1')
    assert read(db, locks.get, lock) is None

    assert not write(db, locks.force_release, lock)
    write(db, locks.insert, lock, 'r2@h', 'token-2', plus(5))
    assert write(db, locks.force_release, lock)
    assert read(db, locks.get, lock) is None


@contract
def test_a_kept_lock_is_taken_over_once_old_enough(db):
    locks = db.repositories.locks
    lock = models.ORDER_PURGE_LOCK
    assert not write(db, locks.take_over, lock, 'r1@h', 'token-1', plus(1),
                     plus(1))
    write(db, locks.insert, lock, 'r1@h', 'token-1', plus(1))

    assert not write(db, locks.take_over, lock, 'r2@h', 'token-2', plus(2),
                     plus(1))
    assert write(db, locks.take_over, lock, 'r2@h', 'token-2', plus(3),
                 plus(2))
    got = read(db, locks.get, lock)
    assert (got.worker_host_name, got.owner_token, got.created_at) == (
        'r2@h', 'token-2', plus(3))
    # The holder taken over from renews nothing any more.
    assert not write(db, locks.renew, lock, 'token-1', plus(4))
    assert write(db, locks.renew, lock, 'token-2', plus(4))
    # Another lock's row is not touched.
    assert read(db, locks.get, models.ORDER_RETRY_TASK_LOCK) is None
