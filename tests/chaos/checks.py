"""What a chaos run must prove, read from the database and the logs.

The worker writes one line per committed result of a step run:
``Order ID (STEP, token N): WHAT``. The recorded order types write one
JSON line per run of a step (``tests/plugin.py``). Together with the
steps' final rows they show whether any run had an effect under a token
that was not its step's latest claim.
"""

import collections
import re

import sqlalchemy as sa

from tests import plugin as test_plugin
from worker.db import locks
from worker.db import models
from worker.db import retry_tasks
from worker.db import services

# Written by the worker after each committed result of a step run.
_STATE_CHANGE = re.compile(
    r'Order (?P<order>[0-9a-f-]{36}) \((?P<step>[a-z][a-z0-9_]*), '
    r'token (?P<token>\d+)\): (?P<what>.*)$', re.MULTILINE)

# The recording certificate plugin names its calls after the plugin's
# methods; the steps of the certificate type that make them.
_PLUGIN_CALL_STEPS = {'issue_certificate_request': 'process_type_order'}


class Change(collections.namedtuple('Change', 'step token what')):
    """One committed result of a step run, as the worker logged it."""

    @property
    def ends_order(self):
        """True if this result moved the order to a terminal status."""
        return (self.what.endswith(', ACTIVE') or
                self.what.startswith('ERROR:') or
                'CANCELLED' in self.what)

    @property
    def ends_step(self):
        """True if this result ended its step (DONE or FAILED)."""
        return ' scheduled at ' not in self.what


def state_changes(log_texts):
    """Return ``{order: [Change, …]}`` from worker logs."""
    changes = collections.defaultdict(list)
    for text in log_texts:
        for match in _STATE_CHANGE.finditer(text):
            changes[match['order']].append(Change(
                match['step'], int(match['token']), match['what']))
    return changes


def recorded_runs(plugin_log):
    """Return ``{(order, step): [run, …]}`` by start time.

    A run is a line of the plugin log (see ``tests/plugin.py``).
    """
    runs = collections.defaultdict(list)
    for run in sorted(test_plugin.read_log(plugin_log),
                      key=lambda run: run['started']):
        step = _PLUGIN_CALL_STEPS.get(run['step'], run['step'])
        runs[(run['order'], step)].append(run)
    return runs


def final_steps(database):
    """Return ``{(order, step): (status, generation)}`` at the end."""
    step = models.OrderStep
    with database.session() as session:
        return {(order_id, name): (status, generation)
                for order_id, name, status, generation in session.execute(
                    sa.select(step.order_id, step.name, step.status,
                              step.generation))}


def stale_effects(runs, changes, steps):
    """Count orders where a step ran or wrote under a superseded token.

    For each step of each order:

    - its recorded runs, by start time, carry strictly increasing tokens:
      two runs under one token means two owners at once, a smaller token
      after a larger one means a stale dispatch ran;
    - each token changes the step at most once, and the step ends (DONE
      or FAILED) at most once;
    - the result that ended it carries the step's final generation: the
      latest claim, never one that was taken back or overtaken.

    :param runs: ``recorded_runs``.
    :param changes: ``state_changes``.
    :param steps: ``final_steps``.
    """
    bad = {order for (order, _), seen in runs.items()
           if _not_increasing([run['token'] for run in seen])}
    for order, seen in changes.items():
        by_step = collections.defaultdict(list)
        for change in seen:
            by_step[change.step].append(change)
        for name, step_changes in by_step.items():
            if _stale_step(step_changes, steps.get((order, name))):
                bad.add(order)
    return len(bad)


def _not_increasing(tokens):
    return any(later <= earlier for earlier, later in zip(tokens,
                                                          tokens[1:]))


def _stale_step(step_changes, final):
    tokens = [change.token for change in step_changes]
    if len(set(tokens)) != len(tokens):
        return True
    ends = [change for change in step_changes if change.ends_step]
    if final is None or len(ends) > 1:
        return True
    if not ends:
        return False
    status, generation = final
    return (status in (models.STEP_DONE, models.STEP_FAILED) and
            ends[0].token != generation)


def double_terminal(changes):
    """Count orders that reached a terminal status more than once."""
    return sum(1 for seen in changes.values()
               if sum(1 for change in seen if change.ends_order) > 1)


def idempotency_keys(runs):
    """Return ``(steps, with_several_keys, keys_shared)``.

    The remote service's view: every run of one step of one order must
    carry the same key, and no two steps share one. Runs without a key
    (the certificate plugin records none) are left out.
    """
    keys = {step: {run['key'] for run in seen if run.get('key')}
            for step, seen in runs.items()}
    keys = {step: found for step, found in keys.items() if found}
    owners = collections.Counter(key for found in keys.values()
                                 for key in found)
    shared = sum(1 for count in owners.values() if count > 1)
    several = sum(1 for found in keys.values() if len(found) > 1)
    return len(keys), several, shared


def most_at_once(plugin_log):
    """``{resource key: the most recorded runs that overlapped}``.

    A run that uses a resource key records it (``resource``) with when it
    started and ended; the slot it held was taken before it started and
    freed after it ended, so runs whose times overlap held slots at once.
    A run whose worker was killed records nothing: it is not counted.
    """
    moments = collections.defaultdict(list)
    for run in test_plugin.read_log(plugin_log):
        if run.get('resource'):
            # An end sorts before a start at the same moment.
            moments[run['resource']] += [(run['started'], 1),
                                         (run['ended'], -1)]
    most = {}
    for key, seen in moments.items():
        running = 0
        most[key] = 0
        for _, change in sorted(seen):
            running += change
            most[key] = max(most[key], running)
    return most


def database_counts(database, order_ids, meant_to_fail):
    """Read the final state: terminal, stuck and lost orders, leftovers.

    A leftover is a row that should be gone once every order ended: a
    retry row, the dispatch lock, a service row, or a step still open
    (WAITING or PENDING) in a terminal order.
    """
    with database.session() as session:
        statuses = {order_id: status for order_id, status in session.execute(
            sa.select(models.Order.id, models.Order.status))}
        leftovers = {
            'retry_rows': len(retry_tasks.list_tasks(session)),
            'lock_rows': int(locks.get(
                session, models.ORDER_RETRY_TASK_LOCK) is not None),
            'service_rows': len(services.list_services(session)),
            'open_steps': _open_steps_of_ended_orders(session),
        }
    terminal = sum(1 for i in order_ids
                   if statuses.get(i) in models.TERMINAL_STATUSES)
    stuck = sum(1 for i in order_ids
                if statuses.get(i) in (models.PENDING, models.CANCELLING))
    lost = [i for i in order_ids
            if i not in statuses or
            (statuses[i] == models.ERROR) != (i in meant_to_fail)]
    return terminal, stuck, lost, leftovers


def error_reasons(database, order_ids):
    """``{order_id: error_reason}`` of those of ``order_ids`` in ERROR."""
    with database.session() as session:
        return dict(session.execute(
            sa.select(models.Order.id, models.Order.error_reason)
            .where(models.Order.id.in_(list(order_ids)),
                   models.Order.status == models.ERROR)).all())


def uncontained_poison(database, order_ids, max_crashes):
    """Count poison orders not ended ERROR by their step's crashes.

    Each must have failed for the reason the worker gives a step that
    crashed ``max_crashes`` times, on a step that counted at least that
    many: one more when the process that was failing it died first (a
    kill of the run, or beside another poison step).
    """
    reason = re.compile(r'the worker died (\d+) times while running this '
                        r'step')
    with database.session() as session:
        found = {order.id: order for order in session.scalars(
            sa.select(models.Order).where(models.Order.id.in_(order_ids)))}
        crashes = {order_id: count for order_id, count in session.execute(
            sa.select(models.OrderStep.order_id,
                      sa.func.max(models.OrderStep.crashes))
            .where(models.OrderStep.order_id.in_(order_ids))
            .group_by(models.OrderStep.order_id))}

    def contained(order_id):
        order = found.get(order_id)
        if order is None or order.status != models.ERROR:
            return False
        said = reason.search(order.error_reason or '')
        return said is not None and \
            int(said.group(1)) == crashes.get(order_id, 0) >= max_crashes

    return sum(1 for order_id in order_ids if not contained(order_id))


def _open_steps_of_ended_orders(session):
    step, order = models.OrderStep, models.Order
    return session.scalar(
        sa.select(sa.func.count())
        .select_from(step)
        .join(order, order.id == step.order_id)
        .where(order.status.in_(models.TERMINAL_STATUSES),
               step.status.in_([models.STEP_WAITING, models.STEP_PENDING])))


def notifications(database, receiver, order_ids, unsubscribed=()):
    """``(events, gaps)``: the distinct events the receiver acknowledged,
    and the orders whose events it did not first see exactly as the
    database holds them: 1, 2, 3 … in sequence, the last ``order.end``.
    An order of ``unsubscribed`` (created without a callback URL) that the
    receiver heard of counts as a gap too.
    """
    seen = receiver.first_seen()
    store = database.repositories.notifications
    gaps = sum(1 for order_id in unsubscribed if order_id in seen)
    with database.reader() as session:
        for order_id in order_ids:
            held = store.events_of_order(session, order_id)
            sequences = [event.sequence for event in held]
            if (sequences != list(range(1, len(held) + 1)) or
                    not held or held[-1].event != 'order.end' or
                    seen.get(order_id) != sequences):
                gaps += 1
    return receiver.count(), gaps
