"""How a batch of due rows is cut into messages."""

import pytest

from scheduler import dispatch


@pytest.mark.parametrize('rows, concurrency, per_cast, sizes', [
    (0, 8, 50, []),
    (3, 8, 50, [1, 1, 1]),            # fewer rows than casts in flight
    (6, 3, 50, [2, 2, 2]),            # a small batch reaches 3 workers
    (500, 8, 50, [50] * 10),          # full messages
    (501, 8, 50, [46] * 6 + [45] * 5),   # near-equal, none over 50
    (20, 2, 5, [5, 5, 5, 5]),
])
def test_a_batch_is_cut_into_near_equal_messages(rows, concurrency,
                                                 per_cast, sizes):
    ids = list(range(rows))
    parts = dispatch.chunks(ids, concurrency, per_cast)
    assert [len(part) for part in parts] == sizes
    # Every row once, in order: the oldest go first.
    assert [i for part in parts for i in part] == ids
