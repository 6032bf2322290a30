"""The applier's writers (``worker.steps.writers``) on the in-memory
database: the writer is chosen once, when the applier is built, and a
batch in which a result moved on is written again one at a time."""

from tests.unit.worker.steps import test_apply as applying
from worker.db import memory
from worker.db import models
from worker.plugins import base
from worker.steps import apply
from worker.steps import writers
from worker import values

#: The ``grows`` order type of ``test_apply``, from now on.
install = applying.install


class _Counting(writers.OneAtATime):
    """A ``OneAtATime`` that counts the batches it writes."""

    def __init__(self, *args):
        super().__init__(*args)
        self.batches = []

    def write(self, items, continuing, undone=None):
        self.batches.append(len(items))
        return super().write(items, continuing, undone)


def test_the_applier_writes_with_the_writer_it_was_built_with(install):
    database = memory.InMemoryDatabase()
    assert isinstance(writers.choose(database, lambda: applying.NOW),
                      writers.Grouped)
    install(applying.Grows)
    applies = applying.Applies(database)
    [run] = applies.claim(applying._order(database))
    written = []

    class Superseding:
        """Finds every result superseded, writing nothing."""

        def write(self, items, continuing):
            written.append((items, continuing))
            return [None] * len(items), [], None

    applier = apply.Applier(database, lambda: applying.NOW, None,
                            applies.observed.append, 50,
                            writer=Superseding())

    assert applier.apply_batch([(run, base.Completed())],
                               continuing=False) == [[]]
    assert written == [([(run, base.Completed())], False)]
    assert applies.observed == ['superseded']
    _, steps = applying._state(database, run.order_id)
    assert steps['first'].status == models.STEP_PENDING


def test_a_batch_in_which_a_result_moved_on_is_written_one_at_a_time(
        install):
    database = memory.InMemoryDatabase()
    install(applying.Grows)
    moved, kept = applying._order(database), applying._order(database)
    applies = applying.Applies(database)
    stale, run = applies.claim(moved, kept)
    # Given back and claimed again: the stale run's token is past.
    applies.claimer.release([stale])
    [again] = applies.claimer.claim_batch(
        [values.StepRef('first', moved, stale.token)])
    assert again[0].token > stale.token
    fallback = _Counting(database, lambda: applying.NOW)
    writer = writers.Grouped(database, lambda: applying.NOW,
                             fallback=fallback)

    decided, woken, claims = writer.write(
        [(stale, base.Completed()), (run, base.Completed())], False)

    # Both results decided as batched; the stale one's fence moved no
    # row, so the batch went again one result at a time.
    assert fallback.batches == [2]
    assert decided[0] is None and decided[1] is not None
    assert claims is None
    _, steps = applying._state(database, kept)
    assert steps['first'].status == models.STEP_DONE
    _, steps = applying._state(database, moved)
    assert (steps['first'].status, steps['first'].generation) == (
        models.STEP_PENDING, again[0].token)


def test_a_batch_that_may_go_together_needs_no_fallback(install):
    database = memory.InMemoryDatabase()
    install(applying.Grows)
    applies = applying.Applies(database)
    runs = applies.claim(applying._order(database),
                         applying._order(database))
    fallback = _Counting(database, lambda: applying.NOW)
    writer = writers.Grouped(database, lambda: applying.NOW,
                             fallback=fallback)

    decided, _, _ = writer.write([(run, base.Completed()) for run in runs],
                                 False)

    assert fallback.batches == []
    assert [decision.kind for decision in decided] == ['done', 'done']
