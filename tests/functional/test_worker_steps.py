"""Worker steps against a real database: results, retries and fencing."""

import datetime
import threading

from tests import config
from worker.db import models
from worker.db import orders
from worker.db import retry_tasks
from worker import manager
from worker.plugins import base
from worker.plugins import simple_certificate

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)


class _Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = NOW

    def __call__(self):
        return self.now


def _manager(database, plugin=None, **overrides):
    conf = config.make_conf(**overrides)
    plugin = plugin or simple_certificate.SimpleCertificatePlugin(5)
    return manager.WorkerManager(conf, database, lambda: plugin,
                                 'worker-1@test', clock=_Clock())


def _order(database, meta=None):
    with database.session() as session, session.begin():
        return orders.create(session, 'certificate', meta or {}, NOW).id


def _state(database, order_id):
    with database.session() as session:
        return (orders.get(session, order_id),
                retry_tasks.list_tasks(session, order_id=order_id))


def test_certificate_order_goes_through_retry_to_active(database):
    worker = _manager(database)
    order_id = _order(database)

    worker.process_type_order({}, order_id, 0)

    order, retries = _state(database, order_id)
    assert order.status == models.PENDING
    assert order.step == 'check_certificate_status'
    [retry] = retries
    assert retry.retry_task == 'check_certificate_status'
    assert retry.retry_at == NOW + datetime.timedelta(seconds=5)
    assert retry.retry_args == '["%s"]' % order_id
    assert retry.retry_kwargs == '{"generation": 1}'

    worker.check_certificate_status({}, order_id, 1)

    order, retries = _state(database, order_id)
    assert order.status == models.ACTIVE and retries == []
    assert order.meta['certificate'] == 'simple-%s' % order_id


def test_duplicate_and_stale_messages_have_no_effect(database):
    worker = _manager(database)
    order_id = _order(database)
    worker.process_type_order({}, order_id, 0)
    before, retries_before = _state(database, order_id)

    worker.process_type_order({}, order_id, 0)          # duplicate
    worker.check_certificate_status({}, order_id, 0)    # stale token
    worker.check_certificate_status({}, order_id, 7)    # future token
    worker.check_certificate_status({}, 'no-such-order', 1)

    after, retries_after = _state(database, order_id)
    assert (after.generation, after.step, after.status) == \
        (before.generation, before.step, before.status)
    assert [r.id for r in retries_after] == [r.id for r in retries_before]

    worker.check_certificate_status({}, order_id, 1)
    worker.check_certificate_status({}, order_id, 1)    # duplicate
    order, _ = _state(database, order_id)
    assert order.status == models.ACTIVE and order.generation == 2


def test_unavailable_remote_backs_off_then_errors(database):
    worker = _manager(database, **{
        'worker.max_unavailable_retries': 3,
        'worker.unavailable_backoff_base_seconds': 10.0,
        'worker.unavailable_backoff_max_seconds': 30.0})
    order_id = _order(database, {'unavailable_attempts': 99})
    generation, delays, counts = 0, [], []
    for _ in range(3):
        worker.process_type_order({}, order_id, generation)
        order, [retry] = _state(database, order_id)
        generation = order.generation
        counts.append(retry.retry_count)
        delays.append((retry.retry_at - NOW).total_seconds())
    assert counts == [1, 2, 3]
    # Equal jitter: retry n waits between half and all of min(30, 10*2^(n-1)).
    assert 5 <= delays[0] <= 10 and 10 <= delays[1] <= 20
    assert 15 <= delays[2] <= 30

    worker.process_type_order({}, order_id, generation)
    order, retries = _state(database, order_id)
    assert order.status == models.ERROR and retries == []
    assert 'unavailable after 3 retries' in order.error_reason


def test_unavailable_then_recovers(database):
    worker = _manager(database)
    order_id = _order(database, {'unavailable_attempts': 1})
    worker.process_type_order({}, order_id, 0)
    order, [retry] = _state(database, order_id)
    assert retry.retry_task == 'process_type_order' and order.attempt == 1
    worker.process_type_order({}, order_id, 1)
    order, [retry] = _state(database, order_id)
    assert retry.retry_task == 'check_certificate_status'
    assert order.attempt == 0


class _ExplodingPlugin(simple_certificate.SimpleCertificatePlugin):
    def issue_certificate_request(self, order):
        raise RuntimeError('boom')


def test_plugin_exception_fails_the_order_with_a_reason(database):
    worker = _manager(database, plugin=_ExplodingPlugin())
    order_id = _order(database)
    worker.process_type_order({}, order_id, 0)
    order, retries = _state(database, order_id)
    assert order.status == models.ERROR and 'boom' in order.error_reason
    assert retries == []


class _FailingPlugin(simple_certificate.SimpleCertificatePlugin):
    def issue_certificate_request(self, order):
        return base.Failed('CA refused the request')


def test_failed_result_sets_error(database):
    worker = _manager(database, plugin=_FailingPlugin())
    order_id = _order(database)
    worker.process_type_order({}, order_id, 0)
    order, _ = _state(database, order_id)
    assert order.status == models.ERROR
    assert order.error_reason == 'CA refused the request'


class _FailingOnce(simple_certificate.SimpleCertificatePlugin):
    """Raises on one order; the others' steps go on."""

    def __init__(self, bad_order):
        super().__init__(5)
        self._bad_order = bad_order

    def issue_certificate_request(self, order):
        if order.id == self._bad_order:
            raise RuntimeError('remote said no')
        return super().issue_certificate_request(order)


def test_steps_of_one_message_are_each_fenced_and_run(database):
    live = [_order(database) for _ in range(3)]
    stale = _order(database)
    worker = _manager(database, plugin=_FailingOnce(live[1]))
    worker.process_type_order({}, stale, 0)             # now at generation 1

    worker.run_steps({}, [
        ['process_type_order', live[0], 0],
        ['process_type_order', stale, 0],               # duplicate
        ['process_type_order', live[1], 0],             # its plugin raises
        ['check_certificate_status', live[2], 0],       # not its step
        ['process_type_order'],                         # malformed
        ['format_disk', live[2], 0],                    # no such step
        ['process_type_order', [live[2]], 0],           # wrong types
        ['process_type_order', live[2], '0'],
        ['process_type_order', live[2], 0],
        ['process_type_order', live[0], 0],             # same message, twice
    ])

    for order_id in (live[0], live[2]):
        order, [retry] = _state(database, order_id)
        assert order.step == 'check_certificate_status'
        assert order.generation == 1 and order.owner is None
    order, retries = _state(database, live[1])
    assert order.status == models.ERROR and retries == []
    assert 'remote said no' in order.error_reason
    order, [retry] = _state(database, stale)
    assert order.generation == 1 and retry.retry_kwargs == \
        '{"generation": 1}'


class _Rendezvous(simple_certificate.SimpleCertificatePlugin):
    """Every call waits until ``parties`` calls are under way at once."""

    def __init__(self, parties):
        super().__init__(5)
        self._barrier = threading.Barrier(parties, timeout=10)

    def issue_certificate_request(self, order):
        self._barrier.wait()
        return super().issue_certificate_request(order)


def test_steps_of_one_message_run_concurrently(database):
    conf = config.make_conf()
    plugin = _Rendezvous(3)
    worker = manager.WorkerManager(conf, database, lambda: plugin,
                                   'worker-1@test', clock=_Clock(),
                                   step_concurrency=3)
    ids = [_order(database) for _ in range(3)]

    # One after another, the first call would wait for the others in vain
    # and its order would fail.
    worker.run_steps({}, [['process_type_order', order_id, 0]
                          for order_id in ids])

    for order_id in ids:
        order, [retry] = _state(database, order_id)
        assert order.status == models.PENDING
        assert order.step == 'check_certificate_status'
