"""Pause and unpause: ``OrderAPI.pause``, ``unpause`` and ``pauses``.

A pause is a row of ``pauses`` (``worker.db.pauses``), durable and seen
by every worker: the claim of a step it holds refuses it
(``worker.steps.pauses``), and the step waits, taking nothing, on a
retry row waiting for the pause. ``unpause`` deletes the row, then wakes
those steps in batches (each batch one transaction: their retry rows
deleted, their steps marked dispatched) and casts them; a step it misses
(its wait written while the pause was being lifted) is cast again by the
retry daemon after ``[worker] pause_recheck_seconds``. A step already
claimed when the pause is set runs to its end.

A paused schedule's ticks make no order (``scheduler.ticks``).
"""

import dataclasses
import datetime

from oslo_db import exception as db_exc
from oslo_log import log as logging

from worker.api import checks
from worker.api import errors
from worker.conf import order_types as type_options
from worker.db import models
from worker.db import pauses as pause_rows
from worker.db import resources as resource_rows
from worker.notifications import bus
from worker import rpcapi

LOG = logging.getLogger(__name__)

#: The pause a retry row's ``waiting_for`` names (None for a resource
#: key), for the operator commands, which read no repository module.
pause_id_of = pause_rows.pause_id_of
#: How many waiting steps one transaction of ``unpause`` wakes.
WAKE_BATCH = 500
#: The longest reason of a pause (``pauses.reason``).
MAX_REASON_LENGTH = 255
#: The longest name of a pause: a resource key's.
MAX_NAME_LENGTH = resource_rows.MAX_KEY_LENGTH


#: What ``OrderAPI.pause`` pauses (``Pause.target``).
PAUSE_TARGETS = models.PAUSE_TARGETS


@dataclasses.dataclass(frozen=True)
class Pause:
    """Something paused (``OrderAPI.pause``), as ``pause list -f json``
    shows it. Times are naive UTC."""

    #: ``order_type``, ``topic``, ``resource``, ``order`` or ``schedule``.
    target: str
    #: The type, topic, resource key, order id or schedule id.
    name: str
    reason: str | None
    #: When it was paused.
    created_at: datetime.datetime
    #: The project of a paused order, else None.
    project_id: str | None = None


def pause_of(row):
    """The ``Pause`` of a ``pauses`` row."""
    return Pause(target=row.target, name=row.name, reason=row.reason,
                 created_at=row.created_at, project_id=row.project_id)


class Pausing:
    """``OrderAPI``'s pauses; a base of it, whose ``__init__`` sets the
    database, the configuration and the outbox."""

    def pause(self, target, name, *, reason=None, project_id=None):
        """Pause ``name`` of ``target`` and return the ``Pause``; pausing
        what is paused returns its pause as it is (its reason unchanged).

        :param target: ``order_type`` (an installed type), ``topic``,
            ``resource`` (a resource key), ``order`` (an order id) or
            ``schedule`` (a schedule id).
        :param reason: why, shown by ``pause list`` and ``order explain``.
        :param project_id: an order's project: only that project's order
            may be paused (another's is ``OrderNotFound``), and only an
            order. None for an operator: any project's order, or any
            other target.
        :raises InvalidRequest: an unknown target, a bad name or reason,
            or a ``project_id`` with a target other than ``order``.
        :raises UnknownOrderType: no such order type is installed.
        :raises OrderNotFound: no such order (in ``project_id``).

        A schedule's id is not looked up here (``worker.api.schedules``
        builds on this module, not the other way round): the commands
        find the schedule with ``ScheduleAPI.get`` first.
        """
        if reason is not None:
            checks.check_text(reason, 'reason', MAX_REASON_LENGTH)
        owner = self._paused_thing(target, name, project_id)
        now = self.now()
        try:
            with self._database.session() as session, session.begin():
                new = self._database.repositories.pauses.add_many(
                    session, target, [name], reason, now, {name: owner})
        except db_exc.DBDuplicateEntry:
            # Paused by another request at the same moment.
            new = []
        pause = self._pause_of(target, name, project_id)
        if new:
            LOG.info('Paused %s %s%s', target, name,
                     ': %s' % reason if reason else '')
            self._announce_order(target, name, bus.PAUSED, now, reason)
        return pause

    def unpause(self, target, name, *, project_id=None):
        """Lift the pause of ``name`` of ``target`` and return it, or
        None if it was not paused; the steps it held are cast at once.

        :param project_id: as ``pause``: only that project's order.
        :raises InvalidRequest: as ``pause``.
        :raises OrderNotFound: an order of another project.
        """
        self._check_target(target, name, project_id)
        if project_id is not None:
            # Another project's order is not found, paused or not.
            self._get(name, project_id)
        with self._database.session() as session, session.begin():
            lifted = self._database.repositories.pauses.remove_many(
                session, target, [name])
        if not lifted:
            return None
        now = self.now()
        woken = self._wake([pause.id for pause in lifted], now)
        LOG.info('Unpaused %s %s; %d waiting step(s) cast', target, name,
                 woken)
        self._announce_order(target, name, bus.UNPAUSED, now)
        return pause_of(lifted[0])

    def pauses(self, *, target=None):
        """Every ``Pause``, oldest first; only those of ``target``."""
        if target is not None:
            self._check_target(target, '-', None)
        with self._database.reader() as session:
            return tuple(pause_of(row) for row in
                         self._database.repositories.pauses.listed(
                             session, target))

    def _paused_thing(self, target, name, project_id):
        """Check what ``pause`` is asked to pause; the project of a paused
        order (else None)."""
        self._check_target(target, name, project_id)
        if target == 'order_type':
            checks.workflow(name)
        elif target == 'order':
            # The whole id: a prefix would pause nothing.
            return self._get(name, project_id).project_id
        elif target == 'schedule':
            checks.check_order_id(name, 'schedule_id')
        return None

    def _check_target(self, target, name, project_id):
        if target not in PAUSE_TARGETS:
            raise errors.InvalidRequest(
                'target must be one of %s, not %.40r'
                % (', '.join(PAUSE_TARGETS), target))
        checks.check_text(name, 'name', MAX_NAME_LENGTH)
        if project_id is not None:
            checks.check_project(project_id)
            if target != 'order':
                raise errors.InvalidRequest(
                    'a project may pause its own orders only, not %s'
                    % target)

    def _pause_of(self, target, name, project_id):
        with self._database.reader() as session:
            found = self._database.repositories.pauses.listed(
                session, target, [name])
        if not found:
            # Unpaused again at once by another request: as it was.
            raise errors.InvalidRequest('%s %s was unpaused meanwhile'
                                        % (target, name))
        return pause_of(found[0])

    def _wake(self, pause_ids, now):
        """Cast the steps the lifted pauses held, ``WAKE_BATCH`` to a
        transaction; returns how many."""
        woken = 0
        for pause_id in pause_ids:
            key = pause_rows.waiting_key(pause_id)
            while True:
                with self._database.session() as session, session.begin():
                    steps = _wake_batch(session,
                                        self._database.repositories, key,
                                        now)
                self._outbox.cast(steps, None)
                woken += len(steps)
                if len(steps) < WAKE_BATCH:
                    break
        return woken

    def _announce_order(self, target, name, event_type, now, reason=None):
        """Announce a paused or unpaused order on the bus
        (``order.paused``, ``order.unpaused``)."""
        if target != 'order':
            return
        try:
            order = self._get(name, None)
        except errors.OrderNotFound:
            # Purged meanwhile: nothing to announce.
            return
        self._outbox.announce(event_type, [order], order.status, now,
                              reason=reason)


def _wake_batch(session, repositories, key, now):
    """Take up to ``WAKE_BATCH`` retry rows waiting for ``key``: deleted,
    their steps marked dispatched at ``now``, as a freed resource slot
    wakes its waiters (``worker.steps.flow.wake``); their steps, to cast
    after the commit."""
    rows = repositories.resources.waiting(session, key, WAKE_BATCH)
    if not rows:
        return []
    taken = repositories.retry_tasks.delete_as_read(session, rows)
    repositories.steps.mark_dispatched(session, taken, now)
    return rpcapi.woken_steps(rows, taken)


def paused_by(conf, found, order_row, waiting_for):
    """The ``Pause`` values of ``found`` (``pauses.matching`` of the
    order) that hold the order: of the order, its type, its type's
    topic, or one a step waits for (``waiting_for``, the ``waiting_for``
    of its retry rows)."""
    topic = type_options.topic(conf, order_row.type)
    waited = {pause_rows.pause_id_of(key) for key in waiting_for}
    holding = {('order', order_row.id), ('order_type', order_row.type),
               ('topic', topic)}
    return tuple(pause_of(pause) for pause in found
                 if (pause.target, pause.name) in holding or
                 pause.id in waited)
