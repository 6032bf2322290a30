"""One row's writes and reads, as tests spell them, through the
repositories' plural forms.

A repository offers one form of each write, the plural; the singular is
the plural of one. Tests that set up or check one row at a time call
these, on an SQL repository module or the in-memory fake alike.
"""


def claim(steps, session, order_id, step, generation, now, owner,
          lease_until):
    """Whether this claim of one step (``steps.claim_many``) took it."""
    return (order_id, step) in steps.claim_many(
        session, [(order_id, step, generation, lease_until)], now, owner)


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
