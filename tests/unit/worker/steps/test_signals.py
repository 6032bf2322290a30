"""Signals to a waiting step, in the worker against the in-memory
database: a step sees the signals it declares at its claim, the run
that completes it consumes them, a poll is woken by one sent while it
ran, and ``WaitForSignal`` is a poll bounded by its timeout.

The sender's side (``OrderAPI.signal``) is in
``tests/unit/worker/test_api_signals.py``.
"""

import datetime

import pytest

from tests.unit.worker import test_manager as harness
from worker.db import models
from worker import order_types
from worker.order_types import base as types_base
from worker.order_types import certificate
from worker.plugins import base

NOW = harness.NOW
REQUEST, CHECK = harness.REQUEST, harness.CHECK
ISSUED = certificate.ISSUED_SIGNAL

# The fixtures of the worker's harness.
database, use_plugin = harness.database, harness.use_plugin


def _send(database, order_id, signal_id, name=ISSUED, payload=None):
    """Store a signal as ``OrderAPI.signal`` does (without its wake)."""
    with database.session() as session, session.begin():
        return database.repositories.signals.add(
            session, order_id, signal_id, name, payload, NOW).id


def _signals(database, order_id):
    """``[(signal_id, consumed_by)]`` of the order's signals."""
    with database.reader() as session, session.begin():
        found = database.repositories.signals.unconsumed_many(
            session, {order_id}, {ISSUED, 'other.signal'})
    unconsumed = {signal.signal_id for signal in found.get(order_id, ())}
    return sorted((signal_id, signal_id not in unconsumed)
                  for signal_id in _ids(database, order_id))


def _ids(database, order_id):
    return [signal.signal_id
            for signal in database._store.signals.values()
            if signal.order_id == order_id]


def _issued_then_checked(database, use_plugin, *check_answers):
    """A certificate order whose request is DONE and whose status check
    is PENDING (due in 5 s); its plugin answers ``check_answers``."""
    order_id = harness._order(database)
    plugin = use_plugin(harness.ScriptedPlugin(base.RetryLater(5, CHECK),
                                               *check_answers))
    worker = harness._worker(database)
    worker.run(REQUEST, order_id, 0)
    return order_id, plugin, worker


def test_a_signal_sent_before_the_step_ran_completes_it_without_a_poll(
        database, use_plugin):
    order_id, plugin, worker = _issued_then_checked(database, use_plugin)
    _send(database, order_id, 's-1', payload={'serial': 42})

    worker.run(CHECK, order_id, 0)

    state = harness._state(database, order_id)
    assert state.order.status == models.ACTIVE
    assert state.order.meta['issued_by_signal'] == {
        'signal_id': 's-1', 'payload': {'serial': 42}}
    # The authority was never asked: the signal said it all.
    assert len(plugin.views) == 1
    assert _signals(database, order_id) == [('s-1', True)]


def test_without_a_signal_the_step_polls_and_leaves_none_consumed(
        database, use_plugin):
    order_id, plugin, worker = _issued_then_checked(
        database, use_plugin, base.RetryLater(3600))

    worker.run(CHECK, order_id, 0)

    state = harness._state(database, order_id)
    [retry] = state.retries
    assert (retry.retry_task, retry.retry_at) == (
        CHECK, NOW + datetime.timedelta(seconds=3600))
    assert worker.client.casts == []
    assert plugin.views[-1].signals == ()


def test_a_signal_sent_while_the_step_polled_wakes_it_at_once(
        database, use_plugin):
    order_id = harness._order(database)
    plugin = use_plugin(harness.ScriptedPlugin(
        base.RetryLater(5, CHECK), base.RetryLater(3600),
        during=lambda view: view.step == CHECK and _send(
            database, view.id, 's-late')))
    worker = harness._worker(database)
    worker.run(REQUEST, order_id, 0)

    # The sender found the step claimed; the poll's own result wakes it.
    worker.run(CHECK, order_id, 0)

    state = harness._state(database, order_id)
    [retry] = state.retries
    assert retry.retry_at == NOW
    assert [(name, kwargs['order_id'], kwargs['generation'])
            for name, kwargs in worker.client.casts] == [
                (CHECK, order_id, 1)]
    # Its next run sees it and completes.
    worker.deliver()
    assert harness._state(database, order_id).order.status == models.ACTIVE
    assert _signals(database, order_id) == [('s-late', True)]
    assert len(plugin.views) == 2


def test_a_signal_a_step_does_not_declare_is_not_shown_to_it(
        database, use_plugin):
    order_id, plugin, worker = _issued_then_checked(
        database, use_plugin, base.RetryLater(60))
    _send(database, order_id, 'x', name='other.signal')

    worker.run(CHECK, order_id, 0)

    assert plugin.views[-1].signals == ()
    assert worker.client.casts == []
    assert _signals(database, order_id) == [('x', False)]


def _waiting_workflow(script):
    class Waiting(types_base.OrderType):
        """One step that waits for ``go``."""

        steps = (types_base.Step('wait', signals=('go',),
                                 policy=harness.STEADY),)

        def wait(self, order):
            return script.answer(order)

    return Waiting


def _waited(database, monkeypatch, answer):
    """The state of a ``waiting`` order whose one step answered
    ``answer``."""
    script = harness.Script(wait=[answer])
    workflows = dict(order_types.installed(), waiting=types_base.check(
        'waiting', _waiting_workflow(script)))
    monkeypatch.setattr(order_types, 'installed', lambda: workflows)
    order_id = harness._order(database, 'waiting')
    harness._worker(database).run('wait', order_id, 0)
    return harness._state(database, order_id)


def test_wait_for_signal_is_a_poll_bounded_by_its_timeout(
        database, monkeypatch):
    state = _waited(database, monkeypatch, base.WaitForSignal('go', 120))

    [retry] = state.retries
    assert retry.retry_at == NOW + datetime.timedelta(seconds=120)
    assert (state.steps['wait'].status, state.steps['wait'].polls) == (
        models.STEP_PENDING, 1)


def test_waiting_for_a_signal_the_step_does_not_declare_fails_it(
        database, monkeypatch):
    order = _waited(database, monkeypatch,
                    base.WaitForSignal('stop', 120)).order

    assert order.status == models.ERROR
    assert "waits for signal 'stop'" in order.error_reason


def test_a_step_declares_signal_names_that_a_check_accepts():
    class Bad(types_base.OrderType):
        steps = (types_base.Step('wait', signals=('Not A Name',)),)

        def wait(self, order):
            return base.Completed()

    with pytest.raises(types_base.InvalidOrderType,
                       match='signals must be a tuple of names'):
        types_base.check('bad', Bad)
