"""A partition under chaos, on clusters in network namespaces.

``cluster.sh start DIR --network`` puts each Galera and RabbitMQ node,
and the host of each node's processes, in a network namespace of its
own; a partition is an nft rule there. This short run cuts one worker
off from every database node (not from its broker) for longer than a
step's lease while processes are killed: its steps are taken back and
run once elsewhere, and nothing is lost, stuck, done twice or left with
a stale effect. The long run, with every network fault, is
``python -m tests.chaos --cluster --network``.

Needs root (network namespaces): skipped otherwise, with the reason.
"""

import os

import pytest

from tests.chaos import network
from tests.chaos import run
from tests.chaos import services as chaos_services

# Six servers of its own, in namespaces; processes killed: run alone.
pytestmark = pytest.mark.exclusive


@pytest.fixture(scope='module')
def clusters(cluster_workdir):
    """Running clusters in network namespaces, stopped at the end."""
    if os.geteuid() != 0:
        pytest.skip('network namespaces need root')
    # Its own clusters even when the Galera variant runs: those are on
    # 127.0.0.1, these in namespaces.
    saved = os.environ.pop(chaos_services.CLUSTER_VARIABLE, None)
    try:
        started = chaos_services.Clusters(cluster_workdir, network=True)
        yield started
        started.close()
    except chaos_services.NetworkUnavailable as exc:
        pytest.skip(str(exc))
    finally:
        if saved is not None:
            os.environ[chaos_services.CLUSTER_VARIABLE] = saved


def test_worker_cut_off_from_database_loses_nothing(clusters, tmp_path):
    report = run.run('mysql', 60, 20, str(tmp_path), clusters, seed=5,
                     recovery_timeout=120, clusters=clusters,
                     network=('worker-db-cut',))
    print(report.line())
    assert len(report.network_faults) == 1
    assert report.network_faults[0].startswith('worker-db-cut(host')
    assert report.kills >= 4
    assert report.stale_effects == 0 and report.double_terminal == 0
    assert report.event_gaps == 0
    assert report.ok, report.line()
    assert network.HOLD['worker-db-cut'] > run.OPTIONS[
        'step:certificate.process_type_order']['timeout_seconds']
