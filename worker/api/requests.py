"""One frozen value per request that travels below the front door.

``NewOrder`` is a create as its caller asked for it (``create``,
``create_many``, a schedule's tick); ``CreateOrders`` is what
``worker.api.commands.create`` writes once the request was checked: the
workflow, the canonical callback URLs, the origin the orders keep. They
replace the positional lists of ten to fourteen parameters that went
from the API through its transactions, as River's ``InsertOpts`` and
Temporal's ``StartWorkflowInput`` do.
"""

import dataclasses
import datetime
import hashlib
import json
import typing

from worker.common import targets
from worker.db import orders as order_rows


@dataclasses.dataclass(frozen=True)
class NewOrder:
    """A request to create ``count`` orders, as the caller gave it (not
    checked yet: ``OrderAPI.submit`` checks it)."""

    order_type: str
    meta: typing.Any
    project_id: str
    count: int = 1
    idempotency_key: str | None = None
    priority: int = 0
    #: The caller's callback URLs, as given.
    callback_urls: typing.Sequence[str] = ()
    #: An aware or naive-UTC time, or None to start at once.
    not_before: datetime.datetime | None = None
    #: The ``oslo_context.context.RequestContext`` of the request, or
    #: None for a new one.
    context: typing.Any = None
    #: The schedule of a tick's order (``worker.api.schedules``), which
    #: a caller of ``create`` cannot give.
    schedule_id: str | None = None

    def fingerprints(self, not_before):
        """``(canonical, as given)``: the request's fingerprint with its
        callback URLs canonical, which is kept with the idempotency key,
        and with them as given, which the release before stored (a retry
        spelling them the same is the same request); ``not_before`` is
        the request's, naive UTC."""
        return (request_hash(self.order_type, self.meta, self.priority,
                             canonical_urls(self.callback_urls),
                             not_before),
                request_hash(self.order_type, self.meta, self.priority,
                             self.callback_urls, not_before))


@dataclasses.dataclass(frozen=True)
class CreateOrders:
    """What ``worker.api.commands.create`` writes: ``count`` PENDING
    orders of ``workflow``."""

    workflow: typing.Any
    meta: dict[str, typing.Any]
    count: int = 1
    #: The orders' priority (``worker.db.models``), which their retry
    #: rows get.
    priority: int = 0
    #: URLs that receive each order's events (checked by
    #: ``worker.notifications.subscriptions.urls_for_order``): each order
    #: gets a delivery to each, and its first event, ``order.created``.
    notify: typing.Sequence[str] = ()
    #: The orders' project, idempotency key and request ids.
    origin: order_rows.Origin = order_rows.NO_ORIGIN
    #: When the orders start (naive UTC), or None for at once. A time
    #: after the create's: their first steps are not cast; each gets a
    #: retry row due then, which the retry daemon casts as any other
    #: (their deliveries start at once).
    not_before: datetime.datetime | None = None
    #: The type's ``[order_type:T] max_pending``, or None for no bound
    #: (``worker.api.admission``).
    max_pending: int | None = None
    #: ``[quota] pending_orders_per_project``, the project's bound unless
    #: the admin overrode it (``worker.api.quotas``); -1 for none.
    project_quota: int = -1
    #: Seconds before the deliveries' first run (``[notifications]
    #: first_run_delay_seconds``): more than 0, they are not cast, but
    #: get a retry row due then, and the order's next event starts them
    #: sooner (``events.record``).
    first_run_delay: float = 0.0


def request_hash(order_type, meta, priority, callback_urls, not_before):
    """A fingerprint of what makes a request the same request: kept with
    the key, compared when the key is used again.

    The caller's callback URLs (canonical: ``canonical_urls``), not the
    operator's ``[notifications] endpoints`` that the order gets too: a
    request retried after the operator changed them is still the same
    request. ``not_before`` only when given, so that the fingerprints of
    requests without it stay those their keys were stored with.
    """
    request = {'type': order_type, 'meta': meta, 'priority': priority,
               'callback_urls': sorted(set(callback_urls))}
    if not_before is not None:
        request['not_before'] = not_before.isoformat()
    text = json.dumps(request, sort_keys=True, separators=(',', ':'))
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def canonical_urls(callback_urls):
    """``callback_urls`` canonical (checked already: none is refused),
    so that two spellings of one receiver are one request."""
    return [targets.canonical(url) for url in callback_urls]
