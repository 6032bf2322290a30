"""Flow control of claims: resource slots, ``max_running`` and rates.

A step names the resource keys its run uses (``Step.resources``, a
callable of its order); its type's ``max_running`` and its own
(``StepPolicy.max_running``) are keys too, with reserved prefixes
(``order_type:T``, ``step:T.S``) and those options as their capacities.
The claim of such a step (``worker.steps.claim``) takes, in its
transaction, a slot of each key (``worker.db.resources``; the keys of a
whole batch in sorted order, so that two claims never wait for each
other in a cycle) and a start of each key with a rate. A step that lacks
one is not claimed: it takes nothing (what it took is given back in the
same transaction) and waits (``park``): its row is no longer in flight
and its retry row names the key it lacks (``waiting_for``), due after
``[worker] resource_recheck_seconds``; a step over a rate waits for the
moment the next start is allowed, the key not named.

A run's result, whatever it is (superseded too), frees the slots of its
token in the transaction that writes it (``release``), and wakes as many
of the oldest steps waiting for each key freed: their retry rows are
deleted, their steps marked dispatched, and they are cast after the
commit. Only the steps that have keys pay for any of this.
"""

import collections.abc as abc
import dataclasses
import datetime
import types
import typing

from worker.conf import order_types as type_options
from worker.conf import resources as resource_options
from worker.db import models
from worker.db import pauses as pause_rows
from worker.db import resources as resource_rows
from worker import rpcapi
from worker import values

Moment = datetime.datetime
#: The prefixes of the implicit keys of ``max_running``: a step's own keys
#: may not use them.
TYPE_PREFIX = 'order_type'
STEP_PREFIX = 'step'
#: The prefix of what a step held by a pause waits for
#: (``worker.db.pauses.waiting_key``).
PAUSE_PREFIX = pause_rows.PREFIX
RESERVED = (TYPE_PREFIX, STEP_PREFIX, PAUSE_PREFIX)
#: The longest key (``resource_slots.key``).
MAX_KEY_LENGTH = resource_rows.MAX_KEY_LENGTH


class Order(typing.NamedTuple):
    """What a step's ``resources`` callable is given of its order."""

    id: str
    type: str
    #: The order's metadata with the outputs of its DONE steps merged in.
    meta: abc.Mapping[str, typing.Any]


@dataclasses.dataclass(frozen=True)
class Key:
    """A key a step needs: its capacity and its rate (or None)."""

    name: str
    capacity: int
    rate: resource_options.Rate | None = None


@dataclasses.dataclass(frozen=True)
class Need:
    """The keys a run of a step needs, sorted by name; or, in ``error``,
    why they could not be named (the step then fails)."""

    keys: tuple[Key, ...] = ()
    error: str | None = None


@dataclasses.dataclass(frozen=True)
class Refusal:
    """Why a step was not claimed and when it is cast again."""

    #: The key whose slot it lacks, or None for a rate.
    waiting_for: str | None
    retry_at: Moment
    #: Why, when it is neither a slot nor a rate (for the log).
    why: str | None = None


@dataclasses.dataclass
class Taken:
    """What one step took in the claim's transaction."""

    slots: list[tuple[str, int]] = dataclasses.field(default_factory=list)
    #: ``(key, slot, last started_at)`` of the starts taken.
    starts: list[tuple[str, int, Moment]] = dataclasses.field(
        default_factory=list)


def meta_of(order: typing.Any, workflow: typing.Any,
            steps: abc.Mapping[str, typing.Any]
            ) -> abc.Mapping[str, typing.Any]:
    """The order's metadata with the outputs of its DONE steps merged in,
    in declaration order (an ``OrderView``'s ``meta``)."""
    meta = dict(order.meta or {})
    for name in workflow.names:
        if name in steps and steps[name].status == models.STEP_DONE:
            meta.update(steps[name].output or {})
    return types.MappingProxyType(meta)


class Limits:
    """The keys of steps, from their declarations and the configuration.

    What a step declares and its bounds are read once per process, as
    its policy is (``worker.steps.workflow``); the capacity and rate of a
    key once per prefix.
    """

    def __init__(self, conf: typing.Any) -> None:
        self._conf = conf
        #: ``[worker] resource_recheck_seconds``.
        self.recheck_seconds = conf.worker.resource_recheck_seconds
        self._declared: dict[tuple[typing.Any, str], typing.Any] = {}
        self._prefixes: dict[str, tuple[int, typing.Any]] = {}

    def need(self, workflow: typing.Any, step: str, policy: typing.Any,
             order: typing.Any, rows: abc.Mapping[str, typing.Any]
             ) -> Need | None:
        """The ``Need`` of a run of ``step`` of ``order``, or None if it
        needs no key (the claim then costs what it always did)."""
        declared = self._declared.get((workflow, step))
        if declared is None:
            declared = self._declared[workflow, step] = self._declare(
                workflow, step, policy)
        implicit, resources = declared
        if not implicit and resources is None:
            return None
        keys = list(implicit)
        if resources is not None:
            try:
                names = _checked(resources(Order(
                    order.id, order.type, meta_of(order, workflow, rows))))
            except Exception as exc:
                return Need(error='could not name its resources: %s: %s'
                            % (type(exc).__name__, exc))
            keys.extend(self._key(name) for name in names)
        return Need(keys=tuple(sorted(keys, key=lambda key: key.name)))

    def _declare(self, workflow: typing.Any, step: str,
                 policy: typing.Any) -> tuple[tuple[Key, ...], typing.Any]:
        """``(implicit keys, resources callable or None)`` of a step."""
        implicit = []
        if workflow.has_step(step):
            type_bound = type_options.max_running(self._conf, workflow)
            if type_bound:
                implicit.append(Key('%s:%s' % (TYPE_PREFIX,
                                               workflow.type_name),
                                    type_bound))
            if policy.max_running:
                implicit.append(Key('%s:%s.%s' % (
                    STEP_PREFIX, workflow.type_name, step),
                    policy.max_running))
            return tuple(implicit), workflow.step(step).resources
        return (), None

    def _key(self, name: str) -> Key:
        prefix = resource_options.prefix_of(name)
        found = self._prefixes.get(prefix)
        if found is None:
            found = self._prefixes[prefix] = (
                resource_options.capacity(self._conf, name),
                resource_options.rate(self._conf, name))
        return Key(name, *found)


def _checked(names: typing.Any) -> list[str]:
    """The keys a ``resources`` callable returned, checked.

    :raises ValueError: saying which key is wrong and why.
    """
    if isinstance(names, str):
        raise ValueError('returned a string, not an iterable of keys: %r'
                         % names)
    checked = []
    for name in names:
        if not isinstance(name, str) or not 1 <= len(name) <= \
                MAX_KEY_LENGTH:
            raise ValueError('a key must be a string of 1 to %d '
                             'characters, not %.80r' % (MAX_KEY_LENGTH,
                                                        name))
        if resource_options.prefix_of(name) in RESERVED:
            raise ValueError('key %r uses a reserved prefix (%s)'
                             % (name, ', '.join(RESERVED)))
        checked.append(name)
    # A key named twice is one slot.
    return sorted(set(checked))


def take(session: typing.Any, repositories: typing.Any,
         wants: abc.Mapping[int, tuple[tuple[str, str, int], Need]],
         now: Moment, recheck_seconds: float
         ) -> tuple[dict[int, Taken], dict[int, Refusal]]:
    """Take the slots and starts of several steps in the claim's
    transaction.

    :param wants: ``{index: (holder, need)}``, the holder being
        ``(order_id, step, token)`` of the run the claim makes.
    :returns: ``(taken, refused)``: what each step took, and why each
        step refused took nothing.
    """
    store = repositories.resources
    taken = {index: Taken() for index in wants}
    refused: dict[int, Refusal] = {}
    by_name: dict[str, list[tuple[int, Key]]] = {}
    for index, (_, need) in wants.items():
        for key in need.keys:
            by_name.setdefault(key.name, []).append((index, key))
    held = store.held(session, list(by_name))
    recheck = now + datetime.timedelta(seconds=recheck_seconds)

    def refuse(index: int, refusal: Refusal) -> None:
        refused[index] = refusal
        undo(session, repositories, taken[index], now)
        for name, slot in taken[index].slots:
            held[name].discard(slot)
        taken[index] = Taken()

    for name in sorted(by_name):
        for index, key in by_name[name]:
            if index in refused:
                continue
            slot = _take_slot(session, store, key, held[name],
                              wants[index][0], now)
            if slot is None:
                refuse(index, Refusal(name, recheck))
            else:
                taken[index].slots.append((name, slot))
    for name in sorted(by_name):
        rated = [(index, key) for index, key in by_name[name]
                 if key.rate is not None and index not in refused]
        if rated:
            for index, refusal in _take_starts(session, store, name,
                                               rated, now, taken):
                refuse(index, refusal)
    return taken, refused


def _take_slot(session: typing.Any, store: typing.Any, key: Key,
               held: set[int], holder: tuple[str, str, int],
               now: Moment) -> int | None:
    """Take the lowest free slot of ``key``; its number, or None."""
    for slot in range(key.capacity):
        if slot in held:
            continue
        # Held whether this claim took it or another claim was first.
        held.add(slot)
        if store.take(session, key.name, slot, holder, now):
            return slot
    return None


def _take_starts(session: typing.Any, store: typing.Any, name: str,
                 rated: list[tuple[int, Key]], now: Moment,
                 taken: dict[int, Taken]
                 ) -> list[tuple[int, Refusal]]:
    """Take a start of key ``name`` for each of ``rated``; the refusals
    of those that found none free, each due when the next start is."""
    rate = rated[0][1].rate
    if rate is None:
        raise TypeError('key %s has no rate' % name)
    period = datetime.timedelta(seconds=rate.period_seconds)
    last = {slot: at for slot, at in store.starts(session, name).items()
            if slot < rate.starts}
    missing = set(range(rate.starts)) - set(last)
    if missing:
        store.add_starts(session, name, missing)
        last.update(dict.fromkeys(missing, resource_rows.NEVER))
    free_before = now - period
    free = sorted((at, slot) for slot, at in last.items()
                  if at <= free_before)
    refusals = []
    for index, _ in rated:
        while free:
            at, slot = free.pop(0)
            if store.take_start(session, name, slot, now, free_before):
                taken[index].starts.append((name, slot, at))
                last[slot] = now
                break
            # Another host's start took it: free a period from now.
            last[slot] = now
        else:
            refusals.append((index, Refusal(None, min(last.values()) +
                                            period)))
    return refusals


def undo(session: typing.Any, repositories: typing.Any, taken: Taken,
         now: Moment) -> None:
    """Give back what one step took in this transaction."""
    store = repositories.resources
    if taken.slots:
        store.give_back(session, taken.slots)
    for name, slot, at in taken.starts:
        store.give_back_start(session, name, slot, now, at)


def park(session: typing.Any, repositories: typing.Any,
         waits: abc.Iterable[tuple[values.StepRef, int, Refusal]],
         now: Moment) -> None:
    """Make refused steps wait: each is no longer in flight, and its
    retry row (replacing any it had) names the key it lacks.

    :param waits: ``(step, priority, refusal)``; ``step`` as its claim
        was asked for, at its current generation.
    """
    waits = list(waits)
    repositories.retry_tasks.delete_for_steps(session, [
        (step.order_id, step.step) for step, _, _ in waits])
    rows = []
    for step, priority, refusal in waits:
        args, kwargs = rpcapi.retry_arguments(step)
        rows.append(dict(order_id=step.order_id, retry_task=step.step,
                         retry_at=refusal.retry_at, args=args,
                         kwargs=kwargs, now=now, priority=priority,
                         waiting_for=refusal.waiting_for))
    repositories.retry_tasks.add_many(session, rows)
    repositories.resources.undispatch(session, [
        (step.order_id, step.step, step.generation)
        for step, _, _ in waits], now)


def release(session: typing.Any, repositories: typing.Any,
            runs: abc.Iterable[typing.Any],
            now: Moment) -> list[values.StepRef]:
    """Free the slots of these runs (their results are being written);
    returns the steps woken, to cast after the commit."""
    holders = [(run.order_id, run.step, run.token) for run in runs
               if run.resources]
    if not holders:
        return []
    return wake(session, repositories,
                repositories.resources.release(session, holders), now)


def wake(session: typing.Any, repositories: typing.Any,
         freed: abc.Mapping[str, int], now: Moment) -> list[values.StepRef]:
    """Take the oldest retry rows waiting for the keys ``freed``, as many
    as slots of each were freed: deleted, their steps marked dispatched at
    ``now``; returns their steps, to cast after the commit."""
    rows = [row for key, count in sorted(freed.items())
            for row in repositories.resources.waiting(session, key, count)]
    if not rows:
        return []
    # Only those still there: another wake, or the retry daemon, may
    # have taken one meanwhile.
    deleted = repositories.retry_tasks.delete_as_read(session, rows)
    repositories.steps.mark_dispatched(session, deleted, now)
    return rpcapi.woken_steps(rows, deleted)
