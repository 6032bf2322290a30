"""Flow control end to end: resource slots, max_running and rates.

Two real barbican-worker processes, the retry daemon, RabbitMQ and each
database run the test order type ``remote_call`` (``tests/plugin.py:
RemoteCall``), whose one step calls a fake remote service in this process
(``tests/functional/remote.py``) under the resource key its order names.
The service counts the calls of each key in flight at once, as a
certificate authority that allows N at once would.
"""

from tests.functional import processes
from tests.functional import remote
from tests.functional import workflows
from worker.db import history
from worker.db import models
from worker.db import resources
from worker.db import retry_tasks

TYPE = 'remote_call'


def _options(*overrides):
    return workflows.options(
        {'worker': {'workers': 2, 'resource_recheck_seconds': 2}},
        *overrides)


def _create(cluster, service, key, count, hold_seconds):
    return workflows.create(cluster, count, meta={
        'url': service.url, 'key': key, 'hold_seconds': hold_seconds},
        order_type=TYPE)


def _claimed_at(database, order_ids):
    """When the ``call`` step of each order was claimed (its run's
    ``started_at`` in the history, the database's clock), sorted."""
    with database.session() as session:
        return sorted(run.started_at for order_id in order_ids
                      for run in history.for_order(session, order_id)
                      if run.result == models.RUN_DONE)


def _waiting_for(database, key):
    with database.session() as session:
        return [row for row in retry_tasks.list_tasks(session)
                if row.waiting_for == key]


def _slots_left(database):
    with database.session() as session:
        return resources.orphans(session, 1000) + [
            slot for key, slots in resources.held(
                session, ['ca:one', 'ca:two', 'rated:x',
                          'order_type:%s' % TYPE]).items()
            for slot in slots]


def test_a_key_never_has_more_runs_than_its_capacity_and_others_go_on(
        deployment, database):
    cluster = deployment(_options({'resource:ca': {'capacity': 3}}))
    with remote.RemoteService() as service:
        workflows.start(cluster, count=2)
        # The first key's calls hang until released: its 3 slots stay
        # held, and its other steps wait.
        service.hold('ca:one')
        busy = _create(cluster, service, 'ca:one', 60, 0.1)
        processes.wait_for(lambda: len(_waiting_for(database, 'ca:one')) ==
                           57, 30, '57 steps waiting for a slot of ca:one')
        assert service.in_flight('ca:one') == 3
        # Another key's orders are not held back by them.
        other = _create(cluster, service, 'ca:two', 5, 0.1)
        workflows.wait_status(database, other, models.ACTIVE, 30)
        assert service.in_flight('ca:one') == 3
        service.release('ca:one')
        workflows.wait_status(database, busy, models.ACTIVE, 60)

        # 64 step threads in each of 2 workers: only the slots held
        # them back.
        assert service.most['ca:one'] == 3
        assert len(service.calls['ca:one']) == 60
        assert service.most['ca:two'] <= 3
    # Every slot was freed with its run's result.
    assert _slots_left(database) == []


def test_a_rate_and_max_running_hold_across_workers(deployment, database):
    cluster = deployment(_options(
        {'resource:rated': {'capacity': 100, 'rate': '5/s'},
         'order_type:%s' % TYPE: {'max_running': 2}}))
    with remote.RemoteService() as service:
        workflows.start(cluster, count=2)
        created = _create(cluster, service, 'rated:x', 16, 0.3)
        workflows.wait_status(database, created, models.ACTIVE, 60)

    # The type's bound, not the key's capacity of 100.
    assert service.most['rated:x'] == 2
    # No second ever held more than 5 starts: in the database's clock
    # (what the rate is kept in), any 6 starts in a row span a second;
    # as the service saw them, so do they (but the moments the calls
    # took to arrive).
    claimed = _claimed_at(database, created)
    assert len(claimed) == 16
    for first, sixth in zip(claimed, claimed[5:]):
        assert (sixth - first).total_seconds() >= 1.0, claimed
    arrived = sorted(at for at, _ in service.calls['rated:x'])
    for first, sixth in zip(arrived, arrived[5:]):
        # A call arrives a moment after its claim: a margin for the
        # machine's load.
        assert sixth - first >= 0.5, arrived
    # The same, second by second from the first start.
    first = claimed[0]
    per_second = [0] * (int((claimed[-1] - first).total_seconds()) + 1)
    for at in claimed:
        per_second[int((at - first).total_seconds())] += 1
    assert max(per_second) <= 5, per_second
    assert _slots_left(database) == []
