"""Group commit: one transaction for the writes of many threads.

A worker process runs up to ``executor_thread_pool_size`` steps at once,
and each step writes twice (its claim, its result). Written one
transaction each, most of a step's cost is the round trips and the commit;
written together, that cost is shared. ``GroupCommit`` batches the writes
that threads hand it *while a batch is being written*: a thread that finds
no batch under way writes at once (alone, when the process is idle, so
nothing waits for a batch to fill), and the threads that arrive meanwhile
are written together by the next of them. This is the group commit of
database logs, and the batched completion of Graphile Worker and River.
"""

import threading


class _Entry:
    """One thread's item and, once written, its answer."""

    __slots__ = ('item', 'done', 'answer', 'error')

    def __init__(self, item):
        self.item = item
        self.done = False
        self.answer = None
        self.error = None


class GroupCommit:
    """Write items handed over by many threads in batches.

    :param write: called with a list of items; returns one answer per
        item, in the same order. An exception it raises is raised in every
        thread of that batch.
    :param max_batch: the largest batch written at once.
    """

    def __init__(self, write, max_batch):
        self._write = write
        self._max_batch = max_batch
        self._ready = threading.Condition()
        self._waiting = []
        self._writing = False

    def __call__(self, item):
        """Write ``item`` with whatever else is waiting; its answer."""
        entry = _Entry(item)
        with self._ready:
            self._waiting.append(entry)
        while True:
            with self._ready:
                # One batch is written at a time; the others wait for it
                # and are written by the next thread to get here.
                while self._writing and not entry.done:
                    self._ready.wait()
                if entry.done:
                    break
                self._writing = True
                batch = self._waiting[:self._max_batch]
                del self._waiting[:self._max_batch]
            try:
                self._write_batch(batch)
            finally:
                with self._ready:
                    self._writing = False
                    self._ready.notify_all()
        if entry.error is not None:
            raise entry.error
        return entry.answer

    def _write_batch(self, batch):
        try:
            answers = self._write([entry.item for entry in batch])
        except Exception as exc:
            for entry in batch:
                entry.error = exc
        else:
            for entry, answer in zip(batch, answers, strict=True):
                entry.answer = answer
        for entry in batch:
            entry.done = True
