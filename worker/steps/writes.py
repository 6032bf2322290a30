# Whole on purpose (over 400 lines): every write a result can make, beside
# the order a batch executes their kinds in (_BATCH_ORDER), which must
# list each batched kind; a new write is one edit here, not two modules.
"""A result's writes as values, and the writer that executes them.

Deciding a result (``worker.steps.outcomes``, a delivery's
``worker.notifications.delivery.decide``) produces a list of the small
frozen values below, one per write, built with their named constructors.
Nothing is written while deciding; the writer executes the lists:

- ``write_one`` executes one result's writes in their order, each
  conditional write (``fenced``) on the run's token or the order's status;
- ``write_batch`` executes the writes of many results by kind, each kind
  in one execution with the parameters of all of them (the repositories'
  ``*_many`` functions, through ``worker.db.statements.execute_many``:
  one statement over arrays on PostgreSQL, over a derived table of the
  rows on MariaDB, an ``executemany`` on SQLite). Sent one by one, each
  statement's set-up in SQLAlchemy costs more than the database's work.

Whether a result can go in a batch is a property of its values
(``batched``): a value that has a ``*_many`` form says so. River's
``JobSetStateIfRunningParams`` and its completer are the model.
"""

import collections
import collections.abc as abc
import dataclasses
import datetime
import typing

from worker.db import models
from worker.db import repositories as repositories_module
from worker.db import rows
from worker.notifications import events as events_module
from worker import rpcapi
from worker.steps import runs
from worker import values

Repos = repositories_module.Repositories
Moment = datetime.datetime
#: A step's output, as stored.
Output = dict[str, typing.Any]

#: What executing one write gives: the steps it woke (to cast after the
#: commit), or None when its fence found the row moved on.
Casts = tuple[values.StepRef, ...] | None


class Undone(Exception):
    """A fenced write failed after another write of the same result had
    succeeded: the transaction must be rolled back to undo it."""


class Moved(Exception):
    """A fenced write of a batch found its step or order moved on."""


class Single:
    """A write executed on its own, never in a batch."""

    fenced: typing.ClassVar[bool] = False
    batched: typing.ClassVar[bool] = False


class _Batched:
    """A write with a ``*_many`` form: alone, it is a batch of one."""

    fenced: typing.ClassVar[bool] = False
    batched: typing.ClassVar[bool] = True

    def write(self, session: typing.Any, repositories: Repos,
              now: Moment) -> Casts:
        """Execute it alone."""
        moved = self.write_many(session, repositories, [self], now)
        return fenced_answer(moved) if self.fenced else ()

    @staticmethod
    def write_many(session: typing.Any, repositories: Repos,
                   writes: abc.Sequence[typing.Any], now: Moment) -> int:
        """Execute several; returns how many rows the fenced ones moved."""
        raise NotImplementedError


@dataclasses.dataclass(frozen=True)
class FinishStep(_Batched):
    """End a step DONE (with its output) or FAILED, if still at ``token``.
    """

    order_id: str
    step: str
    token: int
    status: str
    output: Output | None = None
    last_error: str | None = None

    fenced: typing.ClassVar[bool] = True

    @classmethod
    def done(cls, run: runs.Run, output: Output) -> typing.Self:
        """The run's step ends DONE with ``output``."""
        return cls(run.order_id, run.step, run.token, models.STEP_DONE,
                   output=output)

    @classmethod
    def failed(cls, run: runs.Run, error: str) -> typing.Self:
        """The run's step ends FAILED with ``error``."""
        return cls(run.order_id, run.step, run.token, models.STEP_FAILED,
                   last_error=error)

    @staticmethod
    def write_many(session: typing.Any, repositories: Repos,
                   writes: abc.Sequence[typing.Any], now: Moment) -> int:
        """Execute several; returns how many steps were still at their
        token."""
        return repositories.steps.finish_many(session, [
            (w.order_id, w.step, w.token, w.status, w.output, w.last_error)
            for w in writes], now)


@dataclasses.dataclass(frozen=True)
class RetryStep(_Batched):
    """Release a step for a later run, with its new counters, if still at
    ``token`` (its retry row is an ``AddRetryRow``)."""

    order_id: str
    step: str
    token: int
    failures: int
    polls: int
    last_error: str | None = None

    fenced: typing.ClassVar[bool] = True

    @classmethod
    def of(cls, run: runs.Run, failures: int, polls: int,
           last_error: str | None) -> typing.Self:
        """The run's step is released for a later run."""
        return cls(run.order_id, run.step, run.token, failures, polls,
                   last_error)

    @staticmethod
    def write_many(session: typing.Any, repositories: Repos,
                   writes: abc.Sequence[typing.Any], now: Moment) -> int:
        """Execute several; returns how many steps were still at their
        token."""
        return repositories.steps.retry_many(session, [
            (w.order_id, w.step, w.token, w.failures, w.polls, w.last_error)
            for w in writes], now)


@dataclasses.dataclass(frozen=True)
class CompleteOrder(_Batched):
    """Move a live order to ACTIVE with its final metadata."""

    order_id: str
    meta: Output

    fenced: typing.ClassVar[bool] = True

    @staticmethod
    def write_many(session: typing.Any, repositories: Repos,
                   writes: abc.Sequence[typing.Any], now: Moment) -> int:
        """Execute several; returns how many orders were still live."""
        return repositories.orders.complete_many(
            session, [(w.order_id, w.meta) for w in writes], now)


@dataclasses.dataclass(frozen=True)
class DeleteRetryRows:
    """Delete the retry row of one step, or of every workflow step of the
    order (``step`` None: its deliveries' rows are kept)."""

    order_id: str
    step: str | None = None

    fenced: typing.ClassVar[bool] = False

    @property
    def batched(self) -> bool:
        """One step's row has a ``*_many`` form; an order's rows do not."""
        return self.step is not None

    def write(self, session: typing.Any, repositories: Repos,
              now: Moment) -> Casts:
        """Execute it alone."""
        repositories.retry_tasks.delete_for_order(session, self.order_id,
                                                  self.step)
        return ()

    @staticmethod
    def write_many(session: typing.Any, repositories: Repos,
                   writes: abc.Sequence[typing.Any], now: Moment) -> int:
        """Execute several, each of one step."""
        repositories.retry_tasks.delete_for_steps(
            session, [(w.order_id, w.step) for w in writes])
        return 0


@dataclasses.dataclass(frozen=True)
class AddRetryRow(_Batched):
    """Insert the retry row that casts a step again at ``retry_at``.

    The retry daemon casts it as ``values.StepRef(step, order_id,
    generation, request)``: its arguments are ``rpcapi.retry_arguments``,
    which hold the order's request ids.
    """

    order_id: str
    step: str
    generation: int
    retry_at: datetime.datetime
    retry_count: int
    priority: int
    request: values.RequestIds | None = None

    @classmethod
    def of(cls, run: runs.Run, step: str, generation: int,
           retry_at: Moment, retry_count: int) -> typing.Self:
        """A retry row of ``step`` of the run's order, at its priority."""
        return cls(run.order_id, step, generation, retry_at, retry_count,
                   run.order_priority, run.request)

    @staticmethod
    def write_many(session: typing.Any, repositories: Repos,
                   writes: abc.Sequence[typing.Any], now: Moment) -> int:
        """Execute several in one INSERT."""
        repositories.retry_tasks.add_many(session, [
            w._row(now) for w in writes])
        return 0

    def _row(self, now: Moment) -> dict[str, typing.Any]:
        args, kwargs = rpcapi.retry_arguments(
            values.StepRef(self.step, self.order_id, self.generation,
                           self.request))
        return dict(order_id=self.order_id, retry_task=self.step,
                    retry_at=self.retry_at, args=args, kwargs=kwargs,
                    retry_count=self.retry_count, now=now,
                    priority=self.priority)


@dataclasses.dataclass(frozen=True)
class StartSteps(_Batched):
    """Make WAITING steps of an order PENDING; ``dispatched``: cast at
    ``now`` (their casts are the decision's)."""

    order_id: str
    steps: tuple[str, ...]
    dispatched: bool

    @staticmethod
    def write_many(session: typing.Any, repositories: Repos,
                   writes: abc.Sequence[typing.Any], now: Moment) -> int:
        """Execute several."""
        repositories.steps.start_many(session, [
            (w.order_id, list(w.steps), w.dispatched) for w in writes], now)
        return 0


@dataclasses.dataclass(frozen=True)
class RecordRun(_Batched):
    """Add the run's row to its order's history (``order_step_runs``),
    its ``finished_at`` the write's ``now``.

    Listed after a result's fenced writes, and not fenced itself: it is
    written only with them. A result found superseded gets its
    ``superseded`` row instead, from the applier
    (``worker.steps.apply``).
    """

    order_id: str
    step: str
    token: int
    attempt: int
    worker: str | None
    started_at: Moment | None
    result: str
    error: str | None = None

    @classmethod
    def of(cls, run: runs.Run, result: str,
           error: str | None = None) -> typing.Self:
        """The run ended with ``result`` (one of ``models.RUN_RESULTS``)
        and ``error``."""
        return cls(run.order_id, run.step, run.token, run.attempt,
                   run.worker, run.claimed_at, result, error)

    def superseded(self) -> typing.Self:
        """The same run, its result found superseded."""
        return dataclasses.replace(self, result=models.RUN_SUPERSEDED)

    @staticmethod
    def write_many(session: typing.Any, repositories: Repos,
                   writes: abc.Sequence[typing.Any], now: Moment) -> int:
        """Execute several in one INSERT."""
        repositories.history.add_many(session, [rows.StepRun(
            w.order_id, w.step, w.token, w.attempt, w.worker, w.started_at,
            now, w.result, w.error) for w in writes])
        return 0


@dataclasses.dataclass(frozen=True)
class RecordDelivery(_Batched):
    """Write a delivery's run, if still at ``token``
    (``steps.record_delivery_many``; decided by ``worker.steps.delivery``)."""

    order_id: str
    step: str
    token: int
    status: str
    delivered: int
    failures: int
    last_error: str | None = None
    dispatched: bool = False

    fenced: typing.ClassVar[bool] = True

    @staticmethod
    def write_many(session: typing.Any, repositories: Repos,
                   writes: abc.Sequence[typing.Any], now: Moment) -> int:
        """Execute several; returns how many deliveries were still at
        their token."""
        return repositories.steps.record_delivery_many(session, [
            (w.order_id, w.step, w.token, w.status, w.delivered,
             w.failures, w.last_error, w.dispatched) for w in writes], now)


@dataclasses.dataclass(frozen=True)
class UrlSucceeded(_Batched):
    """A delivery's URL acknowledged events: its failures count from 0."""

    url_id: int

    @staticmethod
    def write_many(session: typing.Any, repositories: Repos,
                   writes: abc.Sequence[typing.Any], now: Moment) -> int:
        """Execute several in one UPDATE."""
        repositories.notifications.url_succeeded_many(
            session, [w.url_id for w in writes])
        return 0


@dataclasses.dataclass(frozen=True)
class FailOrder(Single):
    """Move a live order to ERROR with ``reason``."""

    order_id: str
    reason: str

    fenced: typing.ClassVar[bool] = True

    def write(self, session: typing.Any, repositories: Repos,
              now: Moment) -> Casts:
        """Execute it."""
        return fenced_answer(repositories.orders.fail(
            session, self.order_id, now, self.reason))


@dataclasses.dataclass(frozen=True)
class EndCancel(Single):
    """Move a CANCELLING order to CANCELLED (its compensation ended);
    ``failure`` says why the compensation failed, if it did."""

    order_id: str
    failure: str | None = None

    fenced: typing.ClassVar[bool] = True

    def write(self, session: typing.Any, repositories: Repos,
              now: Moment) -> Casts:
        """Execute it."""
        return fenced_answer(repositories.orders.end_cancel(
            session, self.order_id, now, failure=self.failure))


@dataclasses.dataclass(frozen=True)
class RevokeOpen(Single):
    """Cancel the order's workflow steps that have not ended: those
    running elsewhere lose their claims, those waiting never start."""

    order_id: str
    reason: str

    def write(self, session: typing.Any, repositories: Repos,
              now: Moment) -> Casts:
        """Execute it."""
        repositories.steps.revoke_open(session, self.order_id, now,
                                       self.reason)
        return ()


@dataclasses.dataclass(frozen=True)
class RecordEvents:
    """Append events to the order's, if it has deliveries; wakes them.

    Follows the write that holds the order's row (a status change, or
    the lock a step event is decided under). Its ``*_many`` form writes
    the events of every order of a batch in the same few statements
    (``events.record_many``), and answers the deliveries it woke (a
    list, where the other kinds answer a count of rows).
    """

    order_id: str
    events: tuple[values.Event, ...]
    #: The order's request ids, which the casts of the deliveries carry.
    request: values.RequestIds | None = None

    fenced: typing.ClassVar[bool] = False
    batched: typing.ClassVar[bool] = True

    def write(self, session: typing.Any, repositories: Repos,
              now: Moment) -> Casts:
        """Execute it; the deliveries woken are to be cast."""
        return tuple(self.write_many(session, repositories, [self], now))

    @staticmethod
    def write_many(session: typing.Any, repositories: Repos,
                   writes: abc.Sequence[typing.Any],
                   now: Moment) -> list[values.StepRef]:
        """Execute several, each of another order; the deliveries woken.
        """
        woken: list[values.StepRef] = events_module.record_many(
            session, repositories,
            [(w.order_id, w.events, w.request) for w in writes], now)
        return woken


@dataclasses.dataclass(frozen=True)
class ConsumeSignals(Single):
    """Mark the signals a run saw consumed by its step, which it
    completed (``OrderView.signals``)."""

    order_id: str
    step: str
    ids: tuple[int, ...]

    def write(self, session: typing.Any, repositories: Repos,
              now: Moment) -> Casts:
        """Execute it."""
        repositories.signals.consume(session, self.order_id, self.step,
                                     self.ids, now)
        return ()


@dataclasses.dataclass(frozen=True)
class WakeOnSignals(Single):
    """After the retry row of a step that polls: if a signal it declares
    was sent while it ran (after those it saw), make that row due now and
    cast the step (the sender found it claimed and left it to this).

    Follows the write of the step's row (``RetryStep``), which waits for
    a sender that holds it (``worker.db.signals``).
    """

    order_id: str
    step: str
    generation: int
    names: tuple[str, ...]
    #: The last signal the run saw, or 0.
    after_id: int
    request: values.RequestIds | None = None
    type_name: str | None = None

    def write(self, session: typing.Any, repositories: Repos,
              now: Moment) -> Casts:
        """Execute it; the step, to cast if it was woken."""
        if not repositories.signals.wake(session, self.order_id, self.step,
                                         self.names, self.after_id, now):
            return ()
        return (values.StepRef(self.step, self.order_id, self.generation,
                               self.request, self.type_name),)


#: The kinds a batch writes, in this order: the fenced writes first (a
#: status change holds its order's row before its events are numbered),
#: then a retry's delete of its step's row before the row it adds; the
#: runs' rows last, once every fence held.
_BATCH_ORDER = (FinishStep, RetryStep, CompleteOrder, RecordDelivery,
                RecordEvents, UrlSucceeded, DeleteRetryRows, AddRetryRow,
                StartSteps, RecordRun)


def batched(writes: abc.Iterable[typing.Any]) -> bool:
    """True if every write of a result has a ``*_many`` form."""
    return all(write.batched for write in writes)


def write_one(session: typing.Any, repositories: Repos,
              writes: abc.Iterable[typing.Any], now: Moment) -> Casts:
    """Execute one result's writes in their order.

    :returns: the steps they woke, or None if the first fenced write found
        its row moved on (nothing of the result's state was written).
    :raises Undone: a fenced write failed after another had succeeded.
    """
    woken: list[values.StepRef] = []
    wrote = False
    for write in writes:
        casts = write.write(session, repositories, now)
        if casts is None:
            if wrote:
                raise Undone(write)
            return None
        wrote = wrote or write.fenced
        woken.extend(casts)
    return tuple(woken)


def write_batch(session: typing.Any, repositories: Repos,
                results: abc.Iterable[abc.Iterable[typing.Any]],
                now: Moment) -> list[values.StepRef]:
    """Execute the writes of several results, each kind at once; the
    steps they woke (``RecordEvents``' deliveries), to cast after the
    commit.

    :param results: the writes of each result, all ``batched``; of one
        order, the results of one workflow step at most and of its
        deliveries (a batch writes by kind, not in the order each result
        listed its writes, which is the same only for writes of different
        rows; a delivery's row is written before the events that find it
        DONE and wake it).
    :raises Moved: a fenced write moved fewer rows than it was given; the
        caller must roll back.
    """
    by_kind: dict[type, list[typing.Any]] = collections.defaultdict(list)
    for writes in results:
        for write in writes:
            if not write.batched or type(write) not in _BATCH_ORDER:
                raise TypeError('not a write of a batch: %r' % (write,))
            by_kind[type(write)].append(write)
    expected = moved = 0
    woken: list[values.StepRef] = []
    for kind in _BATCH_ORDER:
        group = by_kind.pop(kind, ())
        if not group:
            continue
        count = kind.write_many(session, repositories, group, now)
        if isinstance(count, list):
            # RecordEvents: the deliveries it woke.
            woken.extend(count)
        elif kind.fenced:
            expected += len(group)
            moved += count
            if moved != expected:
                raise Moved('%d of %d fenced writes moved a row'
                            % (moved, expected))
    return woken


def fenced_answer(written: bool | int) -> Casts:
    """A fenced write's answer: nothing woken, or None if it moved no row.
    """
    return () if written else None
