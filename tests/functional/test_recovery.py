"""Lost work is found from the database and dispatched again, fenced.

Time is a parameter: each pass runs "as of" a given moment; nothing sleeps.
"""

import datetime
import threading


from scheduler import manager as scheduler_manager
from tests import config
from tests import fakes
from tests.functional import counting
from tests import singular
from worker.db import models
from worker.db import orders
from worker.db import retry_tasks
from worker.db import services
from worker.db import steps
from worker import manager as worker_manager
from worker import order_types
from worker.plugins import simple_certificate
from worker import rpcapi

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)
DEADLINE = 300
DOWN = 60
GRACE = 5
REQUEST = 'process_type_order'
CHECK = 'check_certificate_status'


def _seconds(value):
    return datetime.timedelta(seconds=value)


def _conf():
    return config.make_conf(**{
        'service_down_time': DOWN, 'report_interval': 10,
        'scheduler.dispatch_deadline_seconds': DEADLINE,
        'worker.lease_grace_seconds': GRACE})


def _pass(database, now):
    client = fakes.RecordingRPCClient()
    # Crashed steps dispatched again at once, not spread.
    result = scheduler_manager.RetryManager(
        _conf(), database, rpcapi.WorkerAPI(client),
        randomness=fakes.Extreme()).run_once(now)
    return result, client.casts


def _new_order(database, now=NOW):
    with database.session() as session, session.begin():
        return orders.create(session, order_types.get('certificate'), {},
                             now).id


def _get(database, order_id, step=REQUEST):
    """The step ``step`` of the order."""
    with database.session() as session:
        return steps.for_order(session, order_id)[step]


def _claim(database, order_id, owner, now=NOW,
           lease=datetime.timedelta(days=7)):
    """Claim the order's first step for ``owner``, leased ``lease`` long."""
    with database.session() as session, session.begin():
        assert singular.claim(steps, session, order_id, REQUEST, 0, now, owner,
                              now + lease)


def _beat(database, name, now):
    with database.session() as session, session.begin():
        services.heartbeat(session, name, 'worker', 'host', 1, now)


def test_dispatch_never_taken_up_is_sent_again_after_the_deadline(database):
    order_id = _new_order(database)
    result, casts = _pass(database, NOW + _seconds(DEADLINE - 1))
    assert casts == [] and result.recovered == 0

    result, casts = _pass(database, NOW + _seconds(DEADLINE + 1))
    assert result.recovered == 1
    assert casts == [(REQUEST, {'order_id': order_id, 'generation': 1})]
    step = _get(database, order_id)
    # New token: the lost message (generation 0), should it still come,
    # is stale. The re-dispatch counts as a new dispatch.
    assert step.generation == 1 and step.owner is None
    assert NOW + _seconds(DEADLINE + 1) <= step.dispatched_at < \
        NOW + _seconds(DEADLINE + 2)


def test_step_of_a_dead_owner_is_taken_back(database):
    order_id = _new_order(database)
    _claim(database, order_id, 'gone@host')          # never heartbeated
    _beat(database, 'dead@host', NOW)
    other = _new_order(database)
    _claim(database, other, 'dead@host')

    result, casts = _pass(database, NOW + _seconds(DOWN + 1))

    assert result.recovered == 2
    assert sorted(kwargs['order_id'] for _, kwargs in casts) == \
        sorted([order_id, other])
    assert {name for name, _ in casts} == {REQUEST}
    assert {kwargs['generation'] for _, kwargs in casts} == {2}
    assert result.dead_services == ['dead@host']
    with database.session() as session:
        assert services.list_services(session) == []
    # Each counts a crash of its step; not a failure.
    for taken in (order_id, other):
        step = _get(database, taken)
        assert (step.crashes, step.failures) == (1, 0)


def test_crashes_add_up_over_takeovers(database):
    order_id = _new_order(database)
    now = NOW
    for crash in (1, 2, 3):
        with database.session() as session, session.begin():
            assert singular.claim(steps, session, order_id, REQUEST,
                                  2 * crash - 2, now, 'dead-%d@host' % crash,
                                  now + datetime.timedelta(days=7))
        now += _seconds(DOWN + 1)
        result, casts = _pass(database, now)
        assert result.recovered == 1
        assert _get(database, order_id).crashes == crash


def test_live_owner_keeps_its_step_however_long_its_lease(database):
    order_id = _new_order(database)
    _claim(database, order_id, 'slow@host', lease=datetime.timedelta(
        hours=73))
    for hours in (1, 24, 72):
        now = NOW + datetime.timedelta(hours=hours)
        _beat(database, 'slow@host', now - _seconds(DOWN - 1))
        result, casts = _pass(database, now)
        assert casts == [] and result.recovered == 0
    step = _get(database, order_id)
    assert step.owner == 'slow@host' and step.generation == 1

    # Past its lease but within its grace, the run may still write its
    # result: the step is not taken back yet.
    now = NOW + datetime.timedelta(hours=73, seconds=GRACE - 1)
    _beat(database, 'slow@host', now)
    result, casts = _pass(database, now)
    assert casts == [] and result.recovered == 0
    # Past its grace, the step is taken back from its live owner, the run
    # counted as failed (not as a crash: its owner lives).
    now = NOW + datetime.timedelta(hours=73, seconds=GRACE + 1)
    _beat(database, 'slow@host', now)
    result, casts = _pass(database, now)
    assert result.recovered == 1
    assert casts == [(REQUEST, {'order_id': order_id, 'generation': 2})]
    step = _get(database, order_id)
    assert step.owner is None and (step.failures, step.crashes) == (1, 0)
    assert 'lease ended on slow@host' in step.last_error


def test_waiting_orders_are_left_to_their_retry_rows(database):
    with database.session() as session, session.begin():
        order_id = counting.waiting_order(
            session, NOW, retry_at=NOW + datetime.timedelta(days=3))
    result, casts = _pass(database, NOW + datetime.timedelta(days=1))
    assert casts == [] and result.recovered == 0
    assert _get(database, order_id, CHECK).status == models.STEP_PENDING


def test_zombie_owner_result_is_discarded_after_takeover(database,
                                                         use_plugin):
    """A worker presumed dead but still running cannot write its result."""
    held = threading.Event()
    release = threading.Event()

    class _HeldPlugin(simple_certificate.SimpleCertificatePlugin):
        def issue_certificate_request(self, order):
            held.set()
            release.wait(10)
            return super().issue_certificate_request(order)

    use_plugin(_HeldPlugin())
    zombie = worker_manager.WorkerManager(
        _conf(), database, 'zombie@host', clock=lambda: NOW)
    order_id = _new_order(database)
    thread = threading.Thread(target=zombie.process_type_order,
                              args=({}, order_id, 0))
    thread.start()
    assert held.wait(10)
    # The zombie's heartbeat is gone: the next pass takes the step back
    # (its lease, [step:certificate.process_type_order] timeout_seconds,
    # has not ended yet).
    result, casts = _pass(database, NOW + _seconds(DOWN + 1))
    assert result.recovered == 1
    release.set()
    thread.join(10)
    step = _get(database, order_id)
    assert step.generation == 2 and step.owner is None
    assert step.status == models.STEP_PENDING
    assert casts == [(REQUEST, {'order_id': order_id, 'generation': 2})]
    # The zombie's result (request done, status check next) was not
    # written.
    assert _get(database, order_id, CHECK).status == models.STEP_WAITING
    with database.session() as session:
        assert retry_tasks.list_tasks(session, order_id=order_id) == []


def test_one_winner_among_concurrent_claims(database, use_plugin):
    order_id = _new_order(database)
    calls = []

    class _CountingPlugin(simple_certificate.SimpleCertificatePlugin):
        def issue_certificate_request(self, order):
            calls.append(order.token)
            return super().issue_certificate_request(order)

    use_plugin(_CountingPlugin())
    workers = [worker_manager.WorkerManager(_conf(), database, 'w%d@host' % i)
               for i in range(8)]
    barrier = threading.Barrier(len(workers))

    def run(worker):
        barrier.wait()
        worker.process_type_order({}, order_id, 0)

    threads = [threading.Thread(target=run, args=(w,)) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert calls == [1]
    with database.session() as session:
        assert orders.get(session, order_id).status == models.PENDING
    step = _get(database, order_id)
    assert step.status == models.STEP_DONE and step.generation == 1
    assert step.attempt == 1
    assert _get(database, order_id, CHECK).status == models.STEP_PENDING


def test_recovery_runs_once_per_report_interval(database):
    retry_manager = scheduler_manager.RetryManager(
        _conf(), database, rpcapi.WorkerAPI(fakes.RecordingRPCClient()))
    died = NOW + _seconds(DOWN + 1)
    assert retry_manager.run_once(died).recovered == 0   # recovery ran
    order_id = _new_order(database)
    _claim(database, order_id, 'gone@host')           # never heartbeated

    # Liveness is looked at every report_interval (10 s), not every pass.
    assert retry_manager.run_once(died + _seconds(9)).recovered == 0
    assert _get(database, order_id).owner == 'gone@host'
    assert retry_manager.run_once(died + _seconds(10)).recovered == 1
    assert _get(database, order_id).owner is None
