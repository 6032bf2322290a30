"""The pauses' rows (``worker.db.pauses``), on every backend: the claim's
reads, the list forms of pause and unpause, and the census."""

from tests.functional.repositories.shared import contract
from tests.functional.repositories.shared import plus
from tests.functional.repositories.shared import read
from tests.functional.repositories.shared import write


@contract
def test_pausing_many_orders_is_one_write_and_matching_reads_only_theirs(
        db):
    pauses = db.repositories.pauses
    assert not read(db, pauses.any_paused)

    assert write(db, pauses.add_many, 'order', ['o2', 'o1', 'o3'], 'why',
                 plus(1), {'o1': 'p', 'o2': 'p', 'o3': 'q'}) == [
        'o1', 'o2', 'o3']
    # What is paused already is kept, with its reason.
    assert write(db, pauses.add_many, 'order', ['o1', 'o4'], 'other',
                 plus(2)) == ['o4']
    write(db, pauses.add_many, 'order_type', ['certificate'], None,
          plus(3))
    write(db, pauses.add_many, 'resource', ['ca:x'], None, plus(3))

    assert read(db, pauses.any_paused)
    assert [(pause.target, pause.name, pause.project_id, pause.reason)
            for pause in read(db, pauses.matching, ['o1', 'other'])] == [
        ('order', 'o1', 'p', 'why'),
        ('order_type', 'certificate', None, None),
        ('resource', 'ca:x', None, None)]
    # Exact: another spelling of an id is another order.
    assert [pause.name for pause in read(db, pauses.listed, 'order',
                                         ['O1', 'o4'])] == ['o4']
    assert read(db, pauses.census, plus(2)) == {
        'order': (4, 3), 'order_type': (1, 0), 'resource': (1, 0)}

    lifted = write(db, pauses.remove_many, 'order', ['o1', 'o2', 'none'])
    assert sorted(pause.name for pause in lifted) == ['o1', 'o2']
    assert [pause.name for pause in read(db, pauses.listed, 'order')] == [
        'o3', 'o4']
    # A pause set again is a new pause: its id was never used.
    assert write(db, pauses.add_many, 'order', ['o1'], None,
                 plus(4)) == ['o1']
    [new] = read(db, pauses.listed, 'order', ['o1'])
    assert new.id > max(pause.id for pause in lifted)
