"""What a chaos run must prove, read from the database and the logs."""

import collections
import re

import sqlalchemy as sa

from tests import plugin as test_plugin
from worker.db import locks
from worker.db import models
from worker.db import retry_tasks
from worker.db import services

# Written by the worker after each committed state change of an order.
_STATE_CHANGE = re.compile(
    r'Order (?P<order>[0-9a-f-]{36}) \(token (?P<token>\d+)\): '
    r'(?P<outcome>ACTIVE|ERROR|PENDING)')


def state_changes(log_texts):
    """Return ``{order: [(token, outcome), …]}`` from worker logs."""
    changes = collections.defaultdict(list)
    for text in log_texts:
        for match in _STATE_CHANGE.finditer(text):
            changes[match['order']].append((int(match['token']),
                                            match['outcome']))
    return changes


def stale_effects(plugin_log, changes):
    """Count orders where a step ran or wrote under a superseded token.

    Plugin calls of one order, by start time, must carry strictly
    increasing tokens (two calls under one token means two owners at once;
    a smaller token after a larger one means a stale dispatch ran), and
    each token may change the order at most once.
    """
    calls = collections.defaultdict(list)
    for call in sorted(test_plugin.read_log(plugin_log),
                       key=lambda call: call['started']):
        calls[call['order']].append(call['token'])
    bad = {order for order, tokens in calls.items()
           if tokens != sorted(set(tokens))}
    bad |= {order for order, seen in changes.items()
            if len({token for token, _ in seen}) != len(seen)}
    return len(bad)


def double_terminal(changes):
    """Count orders that reached ACTIVE or ERROR more than once."""
    return sum(1 for seen in changes.values()
               if sum(1 for _, outcome in seen if outcome != 'PENDING') > 1)


def database_counts(database, order_ids, meant_to_fail):
    """Read the final state: terminal, stuck and lost orders, leftovers."""
    with database.session() as session:
        statuses = {order_id: status for order_id, status in session.execute(
            sa.select(models.Order.id, models.Order.status))}
        leftovers = {
            'retry_rows': len(retry_tasks.list_tasks(session)),
            'lock_rows': int(locks.get(
                session, models.ORDER_RETRY_TASK_LOCK) is not None),
            'service_rows': len(services.list_services(session)),
        }
    terminal = sum(1 for i in order_ids
                   if statuses.get(i) in models.TERMINAL_STATUSES)
    stuck = sum(1 for i in order_ids if statuses.get(i) == models.PENDING)
    lost = sum(1 for i in order_ids
               if i not in statuses or
               (statuses[i] == models.ERROR) != (i in meant_to_fail))
    return terminal, stuck, lost, leftovers
