"""Pauses at the claim: a step that a pause holds is not claimed.

An operator pauses an order type, a topic (the types cast to it), a
resource key, one order or a schedule (``worker.api.pausing``); a row of
``pauses`` each. The claim (``worker.steps.claim``) asks ``Holds`` which
steps of its batch a pause holds; each of those is refused like a step
that lacks a resource slot (``worker.steps.flow.park``): it takes
nothing, its row is no longer in flight and its retry row waits for
``pause:<id>``, due after ``[worker] pause_recheck_seconds`` (the safety
net); the unpause makes it due at once and casts it.

A claim at rest pays nothing: while nothing is paused, this process
looks for a pause at most once per ``[worker] pause_refresh_seconds``
(one probe of the table, in a claim's transaction); while something is
paused, each claim reads the pauses that may hold its steps (one small
query per batch, never one per step). A pause set while another is seen
holds at once; the first pause set while none was, within
``pause_refresh_seconds``. A step already claimed when a
pause is set runs to its end.
"""

import collections.abc as abc
import datetime
import threading
import typing

from worker.conf import order_types as type_options
from worker.db import pauses as pause_rows
from worker.steps import flow

Moment = datetime.datetime


class Candidate(typing.NamedTuple):
    """A step a claim wants, as the pause check sees it."""

    order_id: str
    order_type: str
    #: The resource keys its run needs (``flow.Need.keys`` names).
    keys: tuple[str, ...]


class Holds:
    """Which steps of a claim's batch a pause holds, for one process.

    :param conf: the ``ConfigOpts`` with ``[worker]`` registered.
    :param repositories: the database's ``Repositories``.
    """

    def __init__(self, conf: typing.Any, repositories: typing.Any) -> None:
        self._conf = conf
        self._pauses = repositories.pauses
        self._lock = threading.Lock()
        #: When this process last looked for a pause, and what it found.
        self._looked_at: Moment | None = None
        self._any = False
        self._topics: dict[str, str] = {}

    def refusals(self, session: typing.Any,
                 candidates: abc.Mapping[int, Candidate],
                 now: Moment) -> dict[int, flow.Refusal]:
        """``{index: flow.Refusal}`` of the ``candidates`` a pause holds,
        each waiting for that pause (``pause_rows.waiting_key``)."""
        if not candidates or not self._maybe_paused(session, now):
            return {}
        found = self._pauses.matching(session, {
            candidate.order_id for candidate in candidates.values()})
        if not found:
            return {}
        by_target: dict[tuple[str, str], pause_rows.Pause] = {
            (pause.target, pause.name): pause for pause in found}
        recheck = now + datetime.timedelta(
            seconds=self._conf.worker.pause_recheck_seconds)
        refused = {}
        for index, candidate in candidates.items():
            pause = self._holding(by_target, candidate)
            if pause is not None:
                refused[index] = flow.Refusal(
                    pause_rows.waiting_key(pause.id), recheck,
                    why='%s %s is paused' % (pause.target, pause.name))
        return refused

    def _maybe_paused(self, session: typing.Any, now: Moment) -> bool:
        """Whether a pause may exist, as last seen: looked up again once
        ``pause_refresh_seconds`` passed since the last look (or the
        clock went back)."""
        with self._lock:
            refresh = datetime.timedelta(
                seconds=self._conf.worker.pause_refresh_seconds)
            if self._looked_at is None or \
                    not self._looked_at <= now < self._looked_at + refresh:
                self._any = self._pauses.any_paused(session)
                self._looked_at = now
            return self._any

    def _holding(self, by_target: abc.Mapping[tuple[str, str],
                                              pause_rows.Pause],
                 candidate: Candidate) -> pause_rows.Pause | None:
        """The pause that holds ``candidate``, or None: its order's, its
        type's, its topic's, then one of its keys'."""
        wanted = [('order', candidate.order_id),
                  ('order_type', candidate.order_type),
                  ('topic', self._topic(candidate.order_type))]
        wanted.extend(('resource', key) for key in candidate.keys)
        for target in wanted:
            if target in by_target:
                return by_target[target]
        return None

    def _topic(self, order_type: str) -> str:
        topic = self._topics.get(order_type)
        if topic is None:
            topic = self._topics[order_type] = type_options.topic(
                self._conf, order_type)
        return topic
