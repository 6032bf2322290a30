"""A 3-node MariaDB Galera cluster and a 3-node RabbitMQ cluster.

Galera certifies writes at COMMIT: two processes on different nodes that
write the same row both run their transaction, and one learns only at its
COMMIT that it lost (a deadlock error). ``SELECT … FOR UPDATE`` locks on
one node only. These tests put the processes on different nodes and
check that such a race is lost quietly, never a crash and never two
owners, and that a chaos run on the clusters loses nothing: the
processes connect through HAProxy (the writer node 1, two backups),
nodes are killed and stopped one at a time (the writer's kill a
failover), then each cluster loses its quorum (two of three nodes down)
for a few seconds. ``python -m tests.chaos --cluster --quorum 60`` is
the long variant.

The clusters are started once for the module (about a minute) unless
``BARBICAN_RETRY_TEST_CLUSTER_DIR`` names running ones.
"""

import datetime
import threading

import pytest

from scheduler import pass_lock
from tests.chaos import run
from tests.chaos import services as chaos_services
from tests.functional import databases
from worker.db import migration
from worker.db import session as db_session

NOW = datetime.datetime(2026, 11, 25, 12, 0, 0)

# Six servers of its own, started once for the module and killed one at a
# time: run alone, in one process.
pytestmark = pytest.mark.exclusive


@pytest.fixture(scope='module')
def clusters(cluster_workdir):
    """The running ``chaos_services.Clusters``."""
    started = chaos_services.Clusters(cluster_workdir)
    yield started
    started.close()


@pytest.fixture
def node_databases(clusters, tmp_path):
    """One migrated database, as a ``Database`` on each Galera node."""
    url = databases.create('mysql', tmp_path, server=clusters.server_url)
    first = db_session.Database.from_url(url)
    migration.upgrade(first.engine)
    on_nodes = [first] + [db_session.Database.from_url(node_url)
                          for node_url, _ in
                          clusters.nodes(url, haproxy=False)[1:]]
    yield on_nodes
    for database in on_nodes:
        database.dispose()
    databases.drop('mysql', url, server=clusters.server_url)


def test_the_pass_lock_has_one_owner_when_nodes_race_for_it(
        node_databases):
    # Daemons on different nodes insert the lock row at the same moment,
    # round after round: Galera lets each insert run and refuses all but
    # one at COMMIT. Each loser must see "held", not an error.
    locks = [pass_lock.PassLock(database, 'retry-%d' % number)
             for number, database in enumerate(node_databases)]
    rounds = 40
    owners = []
    errors = []
    barrier = threading.Barrier(len(locks))

    def race(lock, tokens):
        for _ in range(rounds):
            barrier.wait()
            try:
                tokens.append(lock.acquire(NOW))
            except Exception as exc:  # what must never happen
                errors.append(exc)
                tokens.append(None)
            barrier.wait()
            if tokens[-1] is not None:
                lock.release(tokens[-1])
            barrier.wait()

    results = [[] for _ in locks]
    threads = [threading.Thread(target=race, args=(lock, tokens))
               for lock, tokens in zip(locks, results)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    for round_tokens in zip(*results):
        owners.append(sum(token is not None for token in round_tokens))
    # Exactly one owner per round: never two, never none (the row was
    # released between rounds).
    assert owners == [1] * rounds


# Down time of each loss of quorum in the suite: the long variant's 60 s
# would add minutes to CI; 5 s takes the same paths (no primary
# component, every broker's queues without a majority, then both back).
QUORUM_SECONDS = 5


def test_small_chaos_run_on_the_clusters_loses_nothing(clusters,
                                                       tmp_path):
    report = run.run('mysql', 100, 40, str(tmp_path), None, seed=5,
                     recovery_timeout=180, clusters=clusters,
                     queues='quorum', quorum_seconds=QUORUM_SECONDS)
    print(report.line())
    assert report.kills >= 4
    # Every planned node fault happened, kill and stop, broker and
    # database nodes, each node rejoining before the next fault; the
    # Galera node killed is the writer behind HAProxy; then two of three
    # of each.
    kinds = [fault.split(':')[0].split('-')[0]
             for fault in report.node_faults]
    assert sorted(kinds) == ['galera'] * 3 + ['rabbitmq'] * 3
    assert 'galera-1:kill' in report.node_faults
    times = {fault.name: fault for fault in report.fault_times}
    quorum = [fault for name, fault in times.items() if '+' in name]
    assert len(quorum) == 2
    # Failover: the writes move to a backup once HAProxy marks the writer
    # down and Galera evicts it (evs.suspect_timeout, 5 s): measured
    # 6 s; bounded with room for a loaded machine.
    assert times['galera-1:kill'].write_stall < 20, report.line()
    # Back from a loss of quorum, the work resumes within a few periods
    # (the retry daemons' 1 s here, 15 s dispatch deadline).
    for fault in quorum:
        assert fault.resumed is not None and fault.resumed < 30, \
            report.line()
    assert report.receiver_outages == 1 and 0 < report.subscribed < 100
    assert report.events >= 3 * report.subscribed
    assert report.ok, report.line()
