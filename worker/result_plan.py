"""The results of a batch written together: each kind of write once.

A batch of results (``WorkerManager._apply_batch``) is one transaction.
Most results are a step done (its order ACTIVE, or the next steps
started) or a retry: two or three single-row writes each. Sent one by
one, each statement's set-up in SQLAlchemy costs more than the database's
work. A ``Plan`` takes the writes of many results and sends each kind
once, with the parameters of all of them (the repositories' ``*_many``
functions, through ``worker.db.statements.execute_many``: one statement
over arrays on PostgreSQL, an ``executemany`` elsewhere).

``outcomes.write`` decides a result's writes as it always does, but
against a plan's recorder (``Plan.recorder``) standing in for the
repositories. A fenced write is recorded as if it succeeded; the plan
counts the rows its fenced writes moved, and if a step or order had moved
on, raises ``Moved``: the caller rolls the transaction back and writes
that batch one result at a time, which tells which result lost its token.
A result that asks for anything else (a read, a lock, an event, a failed
order) raises ``NotPlanned`` at once; the caller drops what it recorded
and writes it on its own, in the same transaction.
"""


class NotPlanned(Exception):
    """The result needs a read or a write that a plan does not make."""


class Moved(Exception):
    """A fenced write of the plan found its step or order moved on."""


class Plan:
    """The writes of several results, each of a different order.

    The results of one order are not planned together: a plan writes by
    kind, not in the order each result made its writes, which is the same
    only for writes of different rows.
    """

    def __init__(self):
        self._kept = _Writes()

    def recorder(self):
        """A recorder for one result's writes; ``keep`` it once the
        result's writes are all recorded."""
        return _Recorder()

    def keep(self, recorder):
        """Add the writes of ``recorder`` to the plan."""
        self._kept.extend(recorder.writes)

    def write(self, session, repositories, now):
        """Write the plan in the caller's transaction.

        :raises Moved: a fenced write moved fewer rows than recorded; the
            caller must roll back.
        """
        writes = self._kept
        steps = repositories.steps
        expected = (len(writes.finishes) + len(writes.retries) +
                    len(writes.completions))
        moved = 0
        if writes.finishes:
            moved += steps.finish_many(session, writes.finishes, now)
        if writes.retries:
            moved += steps.retry_many(session, writes.retries, now)
        if writes.completions:
            moved += repositories.orders.complete_many(
                session, writes.completions, now)
        if moved != expected:
            raise Moved('%d of %d fenced writes moved a row'
                        % (moved, expected))
        # A retry replaces its step's row: the deletes go first.
        repositories.retry_tasks.delete_for_steps(session, writes.deletes)
        repositories.retry_tasks.add_many(session, writes.adds)
        steps.start_many(session, writes.starts, now)


class _Writes:
    """Recorded writes, by kind, as the ``*_many`` functions take them."""

    def __init__(self):
        self.finishes, self.retries, self.completions = [], [], []
        self.deletes, self.adds, self.starts = [], [], []

    def extend(self, other):
        for name, calls in vars(other).items():
            getattr(self, name).extend(calls)


class _Recorder:
    """Stands for the repositories in ``outcomes.write`` and records the
    writes a plan makes; anything else is ``NotPlanned``.

    Every write of a batch is at the batch's ``now``: the ``now`` of each
    call is the plan's.
    """

    def __init__(self):
        self.writes = _Writes()
        self.steps = _Steps(self.writes)
        self.orders = _Orders(self.writes)
        self.retry_tasks = _RetryTasks(self.writes)

    def __getattr__(self, name):
        raise NotPlanned(name)


class _Repository:
    def __init__(self, writes):
        self._writes = writes

    def __getattr__(self, name):
        raise NotPlanned('%s.%s' % (type(self).__name__, name))


class _Steps(_Repository):
    def finish(self, session, order_id, name, token, now, status,
               output=None, last_error=None):
        self._writes.finishes.append(
            (order_id, name, token, status, output, last_error))
        return True

    def retry(self, session, order_id, name, token, now, failures, polls,
              last_error=None):
        self._writes.retries.append(
            (order_id, name, token, failures, polls, last_error))
        return True

    def start(self, session, order_id, names, now, dispatched):
        self._writes.starts.append((order_id, list(names), dispatched))


class _Orders(_Repository):
    def complete(self, session, order_id, now, meta):
        self._writes.completions.append((order_id, meta))
        return True


class _RetryTasks(_Repository):
    def delete_for_order(self, session, order_id, step=None):
        if step is None:
            # Every row of the order: a failed order, not planned.
            raise NotPlanned('retry_tasks.delete_for_order')
        self._writes.deletes.append((order_id, step))

    def add(self, session, order_id, retry_task, retry_at, **kwargs):
        self._writes.adds.append(dict(kwargs, order_id=order_id,
                                      retry_task=retry_task,
                                      retry_at=retry_at))
