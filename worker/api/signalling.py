"""Signals: ``OrderAPI.signal`` (a base of ``OrderAPI``), the ``Signal``
it returns, and its transaction, which, as ``worker.api.commands``'
others, returns the steps the signal woke, to cast, and neither casts
nor announces.
"""

import dataclasses
import datetime
import typing
import uuid

from oslo_log import log as logging

from worker.api import checks
from worker.api import errors
from worker import context as context_module
from worker.db import models
from worker.db import session as db_session
from worker import values

LOG = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class Signal:
    """A signal sent to an order (``OrderAPI.signal``). Times are naive
    UTC."""

    order_id: str
    #: The sender's key, or the one generated for it: unique within the
    #: order.
    signal_id: str
    name: str
    #: The JSON value sent with it, or None.
    payload: typing.Any
    created_at: datetime.datetime
    #: When a step consumed it (the run that completed the step), and
    #: which; None while none has.
    consumed_at: datetime.datetime | None = None
    consumed_by: str | None = None
    #: True when this call sent a ``signal_id`` already sent: nothing was
    #: written, and this is the first signal as it is now.
    repeated: bool = False


def signal_of(row, repeated=False):
    """The ``Signal`` of an ``order_signals`` row."""
    return Signal(order_id=row.order_id, signal_id=row.signal_id,
                  name=row.name, payload=row.payload,
                  created_at=row.created_at, consumed_at=row.consumed_at,
                  consumed_by=row.consumed_by, repeated=repeated)


class Signalling:
    """``OrderAPI``'s signals; a base of it, whose ``__init__`` sets the
    database, the configuration and the outbox."""

    def signal(self, order_id, name, payload=None, *, signal_id=None,
               project_id=None, all_projects=False):
        """Send the signal ``name`` to a PENDING order; return it (a
        ``Signal``).

        Stored under the order's lock (durable, after its earlier ones);
        a step that declares ``name`` (``Step(signals=...)``) sees it at
        its next run, and one that waits is cast at once. Sent again with
        a ``signal_id``, nothing is written and the first signal is
        returned (``repeated``), even once the order ended.

        :param payload: any JSON value, bounded as metadata
            (``[api_limits] max_meta_bytes`` and ``max_meta_depth``).
        :param signal_id: the caller's key of this signal, unique within
            the order; by default a new UUID.
        :raises OrderNotFound: no such order (in ``project_id``).
        :raises OrderNotSignallable: the order is not PENDING.
        :raises InvalidRequest: the order's type waits for no signal
            ``name``, or a parameter is out of its bounds.
        :raises InvalidProjectScope: as ``get``.
        """
        scope = checks.scope(project_id, all_projects)
        order = self._get(order_id, scope)
        workflow = checks.workflow(order.type)
        checks.check_signal(workflow, name, signal_id, payload, self._conf)
        if signal_id is None:
            signal_id = str(uuid.uuid4())
        request, now = values.request_ids_of(order), self.now()
        sent = send_signal(self._database, workflow, order.id, name,
                           signal_id, payload, now, request=request)
        if sent is None:
            order = self._get(order.id, scope)
            raise errors.OrderNotSignallable(
                'order %s is %s: only a PENDING order takes signals'
                % (order.id, order.status))
        if sent.to_cast:
            self._outbox.cast(sent.to_cast, request)
        LOG.info('Signal %s (%s) %s order %s%s', name, signal_id,
                 'was sent already to' if sent.repeated else 'sent to',
                 order.id, '; woke %s' % ', '.join(
                     step.step for step in sent.to_cast)
                 if sent.to_cast else '',
                 context=context_module.for_ids(request))
        return signal_of(sent.signal, repeated=sent.repeated)


@dataclasses.dataclass(frozen=True)
class Signalled:
    """What sending one signal did."""

    #: The signal's row: the one written, or the first of its id.
    signal: typing.Any
    #: The signal id had been sent already: nothing was written.
    repeated: bool
    #: The steps it woke (they waited for it), to cast.
    to_cast: tuple[values.StepRef, ...] = ()


def send_signal(database, workflow, order_id, name, signal_id, payload,
                now, request=None):
    """Send the signal ``name`` to a PENDING order; wake the steps that
    wait for it.

    :returns: a ``Signalled``; or None if the order is not PENDING and
        never had a signal ``signal_id``.
    """
    try:
        return _signal_in_a_transaction(database, workflow, order_id, name,
                                        signal_id, payload, now, request)
    except _NotPending:
        return None


class _NotPending(Exception):
    """Raised in ``signal``'s transaction to roll back its lock of an
    order that is not PENDING (a CANCELLING one)."""


@db_session.retry_lost_race
def _signal_in_a_transaction(database, workflow, order_id, name, signal_id,
                             payload, now, request):
    """``signal``'s transaction, under the order's lock: the first signal
    of the id, or the new one and the steps it woke. Run again whole when
    it lost a race (a deadlock with a step's result)."""
    repositories, queries = database.repositories, database.queries
    with database.session() as session, session.begin():
        # The lock first, so that a repeat sent at the same moment finds
        # this one's row, and one order's signals are numbered in order.
        live = repositories.orders.lock_live(session, order_id, now)
        first = queries.signals.find(session, order_id, signal_id)
        if first is not None:
            return Signalled(first, repeated=True)
        if not live:
            return None
        if repositories.orders.get(session, order_id).status != \
                models.PENDING:
            raise _NotPending(order_id)
        row = queries.signals.add(session, order_id, signal_id, name,
                                  payload, now)
        woken = []
        # Held, so that a run of one of them that polls writes its result
        # before (and this finds its retry row) or after (and it finds
        # this signal: worker.db.signals).
        for step in queries.signals.hold_steps(
                session, order_id, workflow.waiting_for(name)):
            if step.status == models.STEP_PENDING and step.owner is None \
                    and repositories.signals.wake(session, order_id,
                                                  step.name, (name,),
                                                  row.id - 1, now):
                woken.append(values.StepRef(step.name, order_id,
                                            step.generation, request,
                                            workflow.type_name))
    return Signalled(row, repeated=False, to_cast=tuple(woken))
