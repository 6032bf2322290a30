"""A delivery's run: what its claim reads for it, and the posting of its
events to its URL, one after the other.

Its claim reads its URL and the events after ``delivered_sequence``
(``read_pending``: for every delivery of a batch of claims in the same
two reads); its run (``send``) posts them one after the other, each only
once the one before was acknowledged, so that a receiver sees an order's
events first in ``sequence`` order (a run that lost its lease may send
an event again: receivers drop duplicates by ``event_id``). What it
answers (``Sent``, ``Paused``, ``KeyMissing``) is decided as writes by
``worker.steps.delivery``.
"""

import dataclasses
import datetime
import time
import typing

from worker.db import models
from worker.notifications import events as events_module
from worker.notifications import sealing
from worker.notifications import signing
from worker.notifications import subscriptions


@dataclasses.dataclass(frozen=True)
class Sent:
    """What one run sent.

    :param delivered: the sequence of the last event acknowledged.
    :param sent: events acknowledged by this run.
    :param failure: why the request after them failed, or None.
    """

    delivered: int
    sent: int = 0
    failure: str | None = None


@dataclasses.dataclass(frozen=True)
class KeyMissing:
    """The run could not read its URL's secret (``sealing.SealingError``):
    the operator's ``[notifications] secret_key_file`` is at fault, not
    the URL.

    :param delivered: the sequence of the last event acknowledged.
    :param reason: the error, which names the option.
    :param sent: events acknowledged by this run before it.
    """

    delivered: int
    reason: str
    sent: int = 0


@dataclasses.dataclass(frozen=True)
class Paused:
    """The run found its URL unavailable and sent nothing.

    :param until_enabled: it waits for its URL to be enabled; False: it
        may not be sent to anyway (another project owns the URL), so an
        available URL is no reason to go on.
    """

    delivered: int
    reason: str
    until_enabled: bool = True


@dataclasses.dataclass(frozen=True)
class Pending:
    """What a delivery's claim read for its run.

    :param target: its URL's row, or None if the URL is gone.
    :param events: the events after its ``delivered_sequence``, in order,
        up to ``[notifications] events_per_run``.
    """

    target: typing.Any
    events: tuple[typing.Any, ...]


def read_pending(session, repositories, conf, claimed):
    """The ``Pending`` of each delivery just claimed, in two reads
    whatever their number, in the claim's transaction.

    :param claimed: ``[(order_id, step, step row as the claim read it)]``.
    :returns: ``{(order_id, step): Pending}``.
    """
    store = repositories.notifications
    targets = store.get_urls(session, {models.url_id_of(step)
                                       for _, step, _ in claimed})
    # Two deliveries of one order (two URLs) may have sent different
    # events: the events after the older of them serve both.
    after = {}
    for order_id, _, row in claimed:
        delivered = events_module.delivered_sequence(row)
        after[order_id] = min(after.get(order_id, delivered), delivered)
    found = store.events_after_many(session, after,
                                    conf.notifications.events_per_run)
    pending = {}
    for order_id, step, row in claimed:
        delivered = events_module.delivered_sequence(row)
        pending[order_id, step] = Pending(
            targets.get(models.url_id_of(step)),
            tuple(event for event in found.get(order_id, ())
                  if event.sequence > delivered))
    return pending


def send(database, sender, conf, run, clock, pending=None):
    """Send the delivery's next events; returns ``Sent``, ``Paused`` or
    ``KeyMissing``.

    Stops at the first failure, after ``events_per_run`` events, or when
    one more request could outlast the run's lease.

    :param pending: what its claim read (``Pending``), or None to read it
        here.
    """
    delivered = events_module.delivered_sequence(run.steps.get(run.step))
    if pending is None:
        with database.reader() as session:
            pending = read_pending(session, database.repositories, conf, [
                (run.order_id, run.step, run.steps.get(run.step))])[
                    run.order_id, run.step]
    refused = _refused(pending.target, run, delivered,
                       conf.notifications.endpoints)
    if refused is not None:
        return refused
    try:
        unseal = sealing.unsealer(conf)
    except sealing.SealingError as exc:
        return KeyMissing(delivered, str(exc))
    return _post(sender, conf, run, clock, pending, delivered, unseal)


def _refused(target, run, delivered, endpoints):
    """The ``Paused`` of a run that may not send to its URL, or None.

    :param endpoints: ``[notifications] endpoints``, which every order's
        events go to whatever their owner.
    """
    if target is None:
        return Paused(delivered, 'its URL is gone')
    if not (subscriptions.owned_by(target, run.project_id) or
            subscriptions.is_endpoint(endpoints, target.url)):
        # Owned since the order named it: its key signs only its
        # project's events.
        return Paused(delivered, 'URL %s belongs to another project'
                      % target.url, until_enabled=False)
    if not target.available:
        return Paused(delivered, 'URL %s is unavailable' % target.url)
    return None


def _post(sender, conf, run, clock, pending, delivered, unseal):
    """Post the events of ``pending`` one after the other; ``Sent``, or
    ``KeyMissing`` if a secret of the URL cannot be read.

    :param unseal: reads the URL's stored secrets (``sealing``).
    """
    group = conf.notifications
    target = pending.target
    sent = 0
    # Each request may take its timeout to connect and again to answer.
    room = datetime.timedelta(seconds=2 * group.timeout_seconds + 1)
    for event in pending.events:
        if clock() + room > run.lease_until:
            break
        started = time.monotonic()
        body = events_module.payload(event, run.project_id)
        # The URL's row, read with the events, holds its secrets: a
        # previous secret that expires during the run stops signing.
        try:
            keys = signing.keys(target, clock(), group.secret, unseal)
        except sealing.SealingError as exc:
            return KeyMissing(delivered, str(exc), sent)
        failure = sender.send(target.url, body, keys)
        if failure is not None:
            return Sent(delivered, sent, '%s (event %d, after %.1fs)' % (
                failure, event.sequence, time.monotonic() - started))
        delivered = event.sequence
        sent += 1
    return Sent(delivered, sent)
