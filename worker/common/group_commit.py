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

    __slots__ = ('item', 'done', 'answer', 'error', 'wake')

    def __init__(self, item):
        self.item = item
        self.done = False
        self.answer = None
        self.error = None
        # Held until this entry's thread may go on: its item written, or
        # its turn to write the next batch. A lock released by another
        # thread is the cheapest one-shot signal threading has.
        self.wake = threading.Lock()
        self.wake.acquire()


class GroupCommit:
    """Write items handed over by many threads in batches.

    :param write: called with a list of items; returns one answer per
        item, in the same order. An exception it raises is raised in every
        thread of that batch.
    :param max_batch: the largest batch written at once.

    One thread writes at a time. The others wait, each on its own entry,
    and are woken once: when their item is written, or, for the oldest
    one, when the writer is done and hands the writing on. Waking every
    waiting thread after each batch (a condition's ``notify_all``) cost a
    tenth of a worker's CPU with 32 threads.
    """

    def __init__(self, write, max_batch):
        self._write = write
        self._max_batch = max_batch
        self._lock = threading.Lock()
        self._waiting = []
        self._writing = False

    def __call__(self, item):
        """Write ``item`` with whatever else is waiting; its answer."""
        entry = _Entry(item)
        with self._lock:
            self._waiting.append(entry)
            writes = not self._writing
            self._writing = True
        if not writes:
            entry.wake.acquire()
        if not entry.done:
            # This thread writes, batch after batch, until its own item is
            # written; then the oldest waiting thread writes the next.
            try:
                while not entry.done:
                    with self._lock:
                        batch = self._waiting[:self._max_batch]
                        del self._waiting[:self._max_batch]
                    self._write_batch(batch)
                    for other in batch:
                        if other is not entry:
                            other.wake.release()
            finally:
                with self._lock:
                    if self._waiting:
                        self._waiting[0].wake.release()
                    else:
                        self._writing = False
        if entry.error is not None:
            raise entry.error
        return entry.answer

    def _write_batch(self, batch):
        try:
            answers = list(self._write([entry.item for entry in batch]))
            if len(answers) != len(batch):
                raise ValueError('%d answer(s) for a batch of %d'
                                 % (len(answers), len(batch)))
        except Exception as exc:
            answers = [None] * len(batch)
            for entry in batch:
                entry.error = exc
        for entry, answer in zip(batch, answers):
            entry.answer = answer
            entry.done = True
