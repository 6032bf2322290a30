"""The writer of write values, against recording repositories:
``worker.steps.writes``."""

import datetime
import types

import pytest

from worker.db import models
from worker.steps import writes

NOW = datetime.datetime(2026, 1, 1, 12, 0, 0)


class _Recording:
    """Repositories that record each call; fenced writes move the rows
    not named in ``moved_on``."""

    def __init__(self, moved_on=()):
        self.calls = []
        moved_on = set(moved_on)

        def fenced_many(name):
            def call(session, rows, now):
                self.calls.append((name, [row[:2] for row in rows]))
                return sum(1 for row in rows if row[0] not in moved_on)
            return call

        def record(name, answer=None):
            def call(session, *args, **kwargs):
                self.calls.append((name, args))
                return answer
            return call

        self.steps = types.SimpleNamespace(
            finish_many=fenced_many('finish_many'),
            retry_many=fenced_many('retry_many'),
            start_many=record('start_many'))
        self.orders = types.SimpleNamespace(
            complete_many=fenced_many('complete_many'),
            fail=lambda session, order_id, now, reason: (
                self.calls.append(('fail', order_id)) or
                order_id not in moved_on))
        self.retry_tasks = types.SimpleNamespace(
            delete_for_steps=record('delete_for_steps'),
            delete_for_order=record('delete_for_order'),
            add_many=record('add_many'))

    def names(self):
        return [name for name, _ in self.calls]


def _done(order_id):
    return (writes.FinishStep(order_id, 'issue', 1, models.STEP_DONE, {}),
            writes.DeleteRetryRows(order_id, 'issue'),
            writes.StartSteps(order_id, ('poll',), True))


def test_one_result_is_written_in_its_order():
    repositories = _Recording()

    assert writes.write_one(None, repositories, _done('a'), NOW) == ()
    assert repositories.names() == ['finish_many', 'delete_for_order',
                                    'start_many']


def test_a_result_whose_first_fence_fails_writes_nothing_more():
    repositories = _Recording(moved_on={'a'})

    assert writes.write_one(None, repositories, _done('a'), NOW) is None
    assert repositories.names() == ['finish_many']


def test_a_fence_that_fails_after_another_held_asks_for_a_rollback():
    repositories = _Recording(moved_on={'a'})
    failed = (writes.FinishStep('b', 'issue', 1, models.STEP_FAILED),
              writes.FailOrder('a', 'refused'))

    with pytest.raises(writes.Undone):
        writes.write_one(None, repositories, failed, NOW)


def test_a_batch_writes_each_kind_once_with_every_result():
    repositories = _Recording()

    writes.write_batch(None, repositories, [_done('a'), _done('b')], NOW)

    assert repositories.calls == [
        ('finish_many', [('a', 'issue'), ('b', 'issue')]),
        ('delete_for_steps', ([('a', 'issue'), ('b', 'issue')],)),
        ('start_many', ([('a', ['poll'], True), ('b', ['poll'], True)],
                        NOW))]


def test_a_batch_with_a_moved_step_is_refused():
    repositories = _Recording(moved_on={'b'})

    with pytest.raises(writes.Moved):
        writes.write_batch(None, repositories, [_done('a'), _done('b')],
                           NOW)


def test_a_batch_refuses_writes_without_a_batched_form():
    assert not writes.batched([writes.DeleteRetryRows('a')])
    with pytest.raises(TypeError, match='DeleteRetryRows'):
        writes.write_batch(None, _Recording(),
                           [(writes.DeleteRetryRows('a'),)], NOW)
