"""Worker steps against a real database: results, retries and fencing."""

import datetime
import threading

import sqlalchemy as sa

from tests import config
from worker.db import models
from worker.db import orders
from worker.db import retry_tasks
from worker.db import steps
from worker import manager
from worker import order_types
from worker.plugins import base
from worker.plugins import simple_certificate
from worker import values

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)
REQUEST = 'process_type_order'
CHECK = 'check_certificate_status'


class _Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = NOW

    def __call__(self):
        return self.now


def _manager(database, use_plugin, plugin=None, **overrides):
    use_plugin(plugin or simple_certificate.SimpleCertificatePlugin(5))
    return manager.WorkerManager(config.make_conf(**overrides), database,
                                 'worker-1@test', clock=_Clock())


def _order(database, meta=None):
    with database.session() as session, session.begin():
        return orders.create(session, order_types.get('certificate'),
                             meta or {}, NOW).id


def _state(database, order_id):
    """The order, ``{name: step}`` of its steps, and its retry rows."""
    with database.session() as session:
        return (orders.get(session, order_id),
                steps.for_order(session, order_id),
                retry_tasks.list_tasks(session, order_id=order_id))


def _tokens(order_steps):
    return {name: (step.generation, step.status)
            for name, step in order_steps.items()}


def test_certificate_order_goes_through_retry_to_active(database,
                                                        use_plugin):
    worker = _manager(database, use_plugin)
    order_id = _order(database)

    worker.process_type_order({}, order_id, 0)

    order, order_steps, retries = _state(database, order_id)
    assert order.status == models.PENDING
    assert order_steps[REQUEST].status == models.STEP_DONE
    assert order_steps[CHECK].status == models.STEP_PENDING
    [retry] = retries
    assert retry.retry_task == CHECK
    assert retry.retry_at == NOW + datetime.timedelta(seconds=5)
    assert retry.retry_args == '["%s"]' % order_id
    # The status check's own token: it has not run yet.
    assert retry.retry_kwargs == '{"generation": 0}'

    worker.check_certificate_status({}, order_id, 0)

    order, order_steps, retries = _state(database, order_id)
    assert order.status == models.ACTIVE and retries == []
    assert {step.status for step in order_steps.values()} == \
        {models.STEP_DONE}
    assert order.meta['certificate'] == 'simple-%s' % order_id


def test_duplicate_and_stale_messages_have_no_effect(database, use_plugin):
    worker = _manager(database, use_plugin)
    order_id = _order(database)
    worker.process_type_order({}, order_id, 0)
    before, steps_before, retries_before = _state(database, order_id)

    worker.process_type_order({}, order_id, 0)          # duplicate
    worker.process_type_order({}, order_id, 1)          # step already DONE
    worker.check_certificate_status({}, order_id, 7)    # future token
    worker.check_certificate_status({}, 'no-such-order', 0)

    after, steps_after, retries_after = _state(database, order_id)
    assert after.status == before.status
    assert _tokens(steps_after) == _tokens(steps_before)
    assert [r.id for r in retries_after] == [r.id for r in retries_before]

    worker.check_certificate_status({}, order_id, 0)
    worker.check_certificate_status({}, order_id, 0)    # duplicate
    order, order_steps, _ = _state(database, order_id)
    assert order.status == models.ACTIVE
    assert _tokens(order_steps) == {REQUEST: (1, models.STEP_DONE),
                                    CHECK: (1, models.STEP_DONE)}


def test_unavailable_remote_backs_off_then_errors(database, use_plugin):
    worker = _manager(database, use_plugin, **{
        'worker.max_unavailable_retries': 3,
        'worker.unavailable_backoff_base_seconds': 10.0,
        'worker.unavailable_backoff_max_seconds': 30.0})
    order_id = _order(database, {'unavailable_attempts': 99})
    generation, delays, counts = 0, [], []
    for _ in range(3):
        worker.process_type_order({}, order_id, generation)
        _, order_steps, [retry] = _state(database, order_id)
        generation = order_steps[REQUEST].generation
        assert retry.retry_kwargs == '{"generation": %d}' % generation
        counts.append(retry.retry_count)
        delays.append((retry.retry_at - NOW).total_seconds())
    assert counts == [1, 2, 3]
    # Equal jitter: retry n waits between half and all of min(30, 10*2^(n-1)).
    assert 5 <= delays[0] <= 10 and 10 <= delays[1] <= 20
    assert 15 <= delays[2] <= 30

    worker.process_type_order({}, order_id, generation)
    order, order_steps, retries = _state(database, order_id)
    assert order.status == models.ERROR and retries == []
    # Three retries (the deprecated option), then the fourth failure.
    assert 'gave up after 4 attempts' in order.error_reason
    assert 'unavailable' in order.error_reason
    assert order_steps[REQUEST].status == models.STEP_FAILED
    assert order_steps[CHECK].status == models.STEP_CANCELLED


def test_unavailable_then_recovers(database, use_plugin):
    worker = _manager(database, use_plugin)
    order_id = _order(database, {'unavailable_attempts': 1})
    worker.process_type_order({}, order_id, 0)
    _, order_steps, [retry] = _state(database, order_id)
    assert retry.retry_task == REQUEST
    assert order_steps[REQUEST].failures == 1
    worker.process_type_order({}, order_id, 1)
    _, order_steps, [retry] = _state(database, order_id)
    assert retry.retry_task == CHECK
    # The next step counts its own failures, from none.
    assert order_steps[CHECK].failures == 0


class _ExplodingPlugin(simple_certificate.SimpleCertificatePlugin):
    def issue_certificate_request(self, order):
        raise RuntimeError('boom')


def test_plugin_exception_fails_the_order_with_a_reason(database,
                                                        use_plugin):
    worker = _manager(database, use_plugin, plugin=_ExplodingPlugin())
    order_id = _order(database)
    worker.process_type_order({}, order_id, 0)
    order, order_steps, retries = _state(database, order_id)
    assert order.status == models.ERROR and 'boom' in order.error_reason
    assert 'boom' in order_steps[REQUEST].last_error
    assert retries == []


class _FailingPlugin(simple_certificate.SimpleCertificatePlugin):
    def issue_certificate_request(self, order):
        return base.Failed('CA refused the request')


def test_failed_result_sets_error(database, use_plugin):
    worker = _manager(database, use_plugin, plugin=_FailingPlugin())
    order_id = _order(database)
    worker.process_type_order({}, order_id, 0)
    order, order_steps, _ = _state(database, order_id)
    assert order.status == models.ERROR
    assert 'CA refused the request' in order.error_reason
    assert order_steps[REQUEST].status == models.STEP_FAILED
    assert order_steps[REQUEST].last_error == 'CA refused the request'


class _FailingOnce(simple_certificate.SimpleCertificatePlugin):
    """Raises on one order; the others' steps go on."""

    def __init__(self, bad_order):
        super().__init__(5)
        self._bad_order = bad_order

    def issue_certificate_request(self, order):
        if order.id == self._bad_order:
            raise RuntimeError('remote said no')
        return super().issue_certificate_request(order)


def test_steps_of_one_message_are_each_fenced_and_run(database, use_plugin):
    live = [_order(database) for _ in range(3)]
    stale = _order(database)
    worker = _manager(database, use_plugin, plugin=_FailingOnce(live[1]))
    worker.process_type_order({}, stale, 0)     # its request: generation 1
    _, _, [stale_retry] = _state(database, stale)

    worker.run_steps({}, [
        [REQUEST, live[0], 0],
        [REQUEST, stale, 0],                    # duplicate
        [REQUEST, live[1], 0],                  # its plugin raises
        [CHECK, live[2], 0],                    # not started yet
        [REQUEST],                              # malformed
        ['format_disk', live[2], 0],            # no such step
        [REQUEST, [live[2]], 0],                # wrong types
        [REQUEST, live[2], '0'],
        [REQUEST, live[2], 0],
        [REQUEST, live[0], 0],                  # same message, twice
    ])

    for order_id in (live[0], live[2]):
        order, order_steps, [retry] = _state(database, order_id)
        assert retry.retry_task == CHECK
        assert _tokens(order_steps) == {REQUEST: (1, models.STEP_DONE),
                                        CHECK: (0, models.STEP_PENDING)}
        assert order_steps[REQUEST].owner is None
        assert order_steps[REQUEST].attempt == 1
    order, _, retries = _state(database, live[1])
    assert order.status == models.ERROR and retries == []
    assert 'remote said no' in order.error_reason
    _, order_steps, [retry] = _state(database, stale)
    assert order_steps[REQUEST].generation == 1
    assert retry.id == stale_retry.id and \
        retry.retry_kwargs == '{"generation": 0}'


class _Rendezvous(simple_certificate.SimpleCertificatePlugin):
    """Every call waits until ``parties`` calls are under way at once."""

    def __init__(self, parties):
        super().__init__(5)
        self._barrier = threading.Barrier(parties, timeout=10)

    def issue_certificate_request(self, order):
        self._barrier.wait()
        return super().issue_certificate_request(order)


def test_steps_of_one_message_run_concurrently(database, use_plugin):
    use_plugin(_Rendezvous(3))
    worker = manager.WorkerManager(config.make_conf(), database,
                                   'worker-1@test', clock=_Clock(),
                                   step_concurrency=3)
    ids = [_order(database) for _ in range(3)]

    # One after another, the first call would wait for the others in vain
    # and its order would fail.
    worker.run_steps({}, [[REQUEST, order_id, 0] for order_id in ids])

    for order_id in ids:
        order, order_steps, [retry] = _state(database, order_id)
        assert order.status == models.PENDING
        assert order_steps[CHECK].status == models.STEP_PENDING


def _statements_of(database, call):
    """How many statements ``call`` sends (an executemany is one)."""
    sent = []

    def count(*args):
        sent.append(args)
    sa.event.listen(database.engine, 'before_cursor_execute', count)
    try:
        call()
    finally:
        sa.event.remove(database.engine, 'before_cursor_execute', count)
    return len(sent)


def test_a_batch_of_results_costs_a_few_statements_not_a_few_per_result(
        database, use_plugin):
    """Results written together (``worker.steps.writes``): each kind of
    write is one execution for the whole batch, on every database."""
    worker = _manager(database, use_plugin)
    sent = {}
    for size in (2, 12):
        order_ids = [_order(database) for _ in range(size)]
        claimed = worker._claimer.claim_batch(
            [values.StepRef(REQUEST, order_id, 0) for order_id in order_ids])
        results = [(run, base.Completed({'serial': run.order_id}))
                   for run, _ in claimed]
        sent[size] = _statements_of(
            database, lambda: worker._applier.apply_batch(results))
        for order_id in order_ids:
            order, order_steps, retries = _state(database, order_id)
            assert _tokens(order_steps) == {REQUEST: (1, models.STEP_DONE),
                                            CHECK: (0, models.STEP_PENDING)}
            assert order_steps[REQUEST].output == {'serial': order_id}
            assert order.status == models.PENDING and retries == []
            # Each run's row in its order's history: in the batch's one
            # INSERT of them.
            with database.reader() as session:
                [run] = database.repositories.history.for_order(session,
                                                                order_id)
            assert (run.step, run.attempt, run.result) == (
                REQUEST, 1, models.RUN_DONE)

    assert sent[12] == sent[2], sent
