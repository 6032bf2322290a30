"""One row's writes and reads, as tests spell them, through the
repositories' plural forms.

A repository offers one form of each write, the plural; the singular is
the plural of one. Tests that set up or check one row at a time call
these, on an SQL repository module or the in-memory fake alike; where a
test passes a repository call as a function (``write(db, call, ...)``),
``on(repository).claim`` is that call.
"""

import functools
import sys


def claim(steps, session, order_id, step, generation, now, owner,
          lease_until):
    """Whether this claim of one step (``steps.claim_many``) took it."""
    return (order_id, step) in steps.claim_many(
        session, [(order_id, step, generation, lease_until)], now, owner)


def retry(steps, session, order_id, step, token, now, failures, polls,
          last_error=None):
    """Whether ``steps.retry_many`` released this one step."""
    return steps.retry_many(session, [(order_id, step, token, failures,
                                       polls, last_error)], now) == 1


def finish(steps, session, order_id, step, token, now, status, output=None,
           last_error=None):
    """Whether ``steps.finish_many`` ended this one step."""
    return steps.finish_many(session, [(order_id, step, token, status,
                                        output, last_error)], now) == 1


def start(steps, session, order_id, names, now, dispatched):
    """``steps.start_many`` of one order's steps."""
    steps.start_many(session, [(order_id, names, dispatched)], now)


def record_delivery(steps, session, order_id, step, token, now, status,
                    delivered, failures, last_error=None, dispatched=False):
    """Whether ``steps.record_delivery_many`` wrote this one run."""
    return steps.record_delivery_many(session, [(
        order_id, step, token, status, delivered, failures, last_error,
        dispatched)], now) == 1


def complete(orders, session, order_id, now, meta):
    """Whether ``orders.complete_many`` moved this one order to ACTIVE."""
    return orders.complete_many(session, [(order_id, meta)], now) == 1


def add_retry(retry_tasks, session, order_id, retry_task, retry_at,
              **arguments):
    """Insert one retry row (``retry_tasks.add_many``); returns its id,
    the highest of the order's rows of that task (ids only grow)."""
    retry_tasks.add_many(session, [dict(
        arguments, order_id=order_id, retry_task=retry_task,
        retry_at=retry_at)])
    return max(row.id for row in retry_tasks.list_tasks(
        session, order_id=order_id) if row.retry_task == retry_task)


def lock_order(notifications, session, order_id, now):
    """``notifications.lock_orders`` of one order."""
    notifications.lock_orders(session, [order_id], now)


def get_url(notifications, session, url_id):
    """The URL row with this id (``notifications.get_urls``), or None."""
    return notifications.get_urls(session, [url_id]).get(url_id)


def url_succeeded(notifications, session, url_id):
    """``notifications.url_succeeded_many`` of one URL."""
    notifications.url_succeeded_many(session, [url_id])


def with_steps(orders, session, order_id):
    """``(order, {name: step})`` of one order (``orders.with_steps_many``);
    ``(None, {})`` if there is no such order."""
    return orders.with_steps_many(session, [order_id]).get(order_id,
                                                           (None, {}))


def add_events(notifications, session, order_id, events, now):
    """The sequences of ``events`` appended to one order's
    (``notifications.add_events_many``)."""
    return notifications.add_events_many(
        session, {order_id: list(events)}, now).get(order_id, [])


def last_sequence(notifications, session, order_id):
    """The sequence of one order's last event; 0 if it has none."""
    return notifications.last_sequences(session, [order_id]).get(order_id,
                                                                 0)


def events_after(notifications, session, order_id, sequence, limit):
    """One order's events after ``sequence``, up to ``limit``."""
    return notifications.events_after_many(session, {order_id: sequence},
                                           limit)[order_id]


def deliveries(notifications, session, order_id):
    """``{name: (status, generation)}`` of one order's deliveries."""
    return {name: (status, generation) for name, (status, generation, _)
            in notifications.deliveries_of_orders(
                session, [order_id]).get(order_id, {}).items()}


class on:  # noqa: N801 - read as a function: ``on(steps).claim``
    """The functions above bound to one repository, to pass as calls."""

    def __init__(self, repository):
        self._repository = repository

    def __getattr__(self, name):
        return functools.partial(getattr(sys.modules[__name__], name),
                                 self._repository)
