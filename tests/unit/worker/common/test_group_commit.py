"""``GroupCommit``: the writes of many threads, in batches."""

import threading
import time

import pytest

from worker.common import group_commit


class Recorder:
    """A ``write`` that records its batches; the first one can be held."""

    def __init__(self, hold_first=False, fail_on=None):
        self.batches = []
        self.release = threading.Event()
        self.writing = threading.Event()
        self._hold_first = hold_first
        self._fail_on = fail_on

    def __call__(self, items):
        self.batches.append(list(items))
        self.writing.set()
        if self._hold_first and len(self.batches) == 1:
            assert self.release.wait(10)
        if self._fail_on in items:
            raise RuntimeError('database gone')
        return ['answer %s' % item for item in items]


def _in_threads(commit, items):
    answers, errors = {}, {}

    def hand(item):
        try:
            answers[item] = commit(item)
        except RuntimeError as exc:
            errors[item] = exc
    threads = [threading.Thread(target=hand, args=(item,)) for item in items]
    for thread in threads:
        thread.start()
    return threads, answers, errors


def _wait_until_queued(commit, count):
    # The threads queue their items before they wait for the batch under
    # way; nothing public tells that they have, so look at the queue.
    deadline = time.monotonic() + 10
    while len(commit._waiting) < count:
        assert time.monotonic() < deadline
        time.sleep(0.001)


def test_an_item_alone_is_written_at_once_and_gets_its_answer():
    write = Recorder()
    commit = group_commit.GroupCommit(write, max_batch=10)

    assert commit('a') == 'answer a'
    assert commit('b') == 'answer b'
    assert write.batches == [['a'], ['b']]


def test_items_handed_over_during_a_write_go_together_in_the_next():
    write = Recorder(hold_first=True)
    commit = group_commit.GroupCommit(write, max_batch=3)
    first, answers, _ = _in_threads(commit, ['first'])
    assert write.writing.wait(10)

    others, _, _ = _in_threads(commit, list('abcde'))
    _wait_until_queued(commit, 5)
    write.release.set()
    for thread in first + others:
        thread.join(10)

    assert write.batches[0] == ['first']
    # At most max_batch at once, each item written once, in the order
    # they were handed over.
    assert [len(batch) for batch in write.batches[1:]] == [3, 2]
    assert sorted(sum(write.batches[1:], [])) == list('abcde')
    assert answers == {'first': 'answer first'}


def test_a_failed_write_fails_only_its_own_batch():
    write = Recorder(hold_first=True, fail_on='b')
    commit = group_commit.GroupCommit(write, max_batch=2)
    first, _, _ = _in_threads(commit, ['first'])
    assert write.writing.wait(10)
    threads, answers, errors = _in_threads(commit, ['a', 'b'])
    _wait_until_queued(commit, 2)
    write.release.set()
    for thread in first + threads:
        thread.join(10)

    assert sorted(errors) == ['a', 'b']
    assert str(errors['a']) == 'database gone'
    # The next item is written as if nothing happened.
    assert commit('c') == 'answer c'
    assert answers == {}


def test_a_write_must_answer_every_item():
    commit = group_commit.GroupCommit(lambda items: [], max_batch=2)

    with pytest.raises(ValueError):
        commit('a')


def test_many_threads_each_get_their_own_answer_once():
    """Threads arriving while batches are written: every item written
    exactly once, each thread its own answer, one writer at a time."""
    writing = []

    def write(items):
        writing.append(None)
        assert len(writing) == 1, 'two batches written at once'
        time.sleep(0.001)
        writing.pop()
        return ['answer %s' % item for item in items]
    commit = group_commit.GroupCommit(write, max_batch=7)
    items = list(range(200))

    threads, answers, errors = _in_threads(commit, items)
    for thread in threads:
        thread.join(10)

    assert errors == {}
    assert answers == {item: 'answer %s' % item for item in items}
    assert commit._waiting == [] and not commit._writing
