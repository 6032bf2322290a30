"""``python -m tests.chaos``: see tests/chaos/__init__.py."""

import argparse
import os
import sys
import tempfile

from tests.chaos import network
from tests.chaos import run
from tests.chaos import services as chaos_services


def main(argv=None):
    """Parse the arguments, run the scenario, print the summary line."""
    parser = argparse.ArgumentParser(prog='python -m tests.chaos',
                                     description=__doc__)
    parser.add_argument('--db', choices=['sqlite', 'postgresql', 'mysql'],
                        default=None,
                        help='The database (default postgresql; mysql '
                             'with --cluster).')
    parser.add_argument('--orders', type=int, default=2000)
    parser.add_argument('--duration', type=int, default=180,
                        help='Seconds of faults.')
    parser.add_argument('--type', dest='order_type', default='certificate',
                        choices=sorted(run.ORDER_TYPES),
                        help='Order type: certificate (default), or fanout '
                             '(steps in parallel; the recorded runs also '
                             'prove one idempotency key per step).')
    parser.add_argument('--queues', default=None,
                        choices=sorted(run.QUEUES),
                        help='RabbitMQ queues: classic (durable, the '
                             'default) or quorum (the default with '
                             '--network or --quorum: a classic queue is '
                             'gone with its node).')
    parser.add_argument('--cluster', action='store_true',
                        help='Run on a 3-node MariaDB Galera cluster and '
                             'a 3-node RabbitMQ cluster (started unless '
                             'BARBICAN_RETRY_TEST_CLUSTER_DIR names '
                             'running ones), each daemon on its own node, '
                             'with node kills and stops in place of '
                             'server restarts. Implies --db mysql.')
    parser.add_argument('--network', action='store_true',
                        help='With --cluster: every node and the host of '
                             'each node\'s processes in a network '
                             'namespace of its own (cluster.sh start '
                             '--network, needs root), and network faults '
                             'one at a time in place of the node faults: '
                             '%s. The fault time is stretched to hold '
                             'them.' % ', '.join(network.ALL))
    parser.add_argument('--quorum', type=int, default=0, metavar='SECONDS',
                        help='With --cluster: after the node faults, two '
                             'of three Galera nodes (the writer among '
                             'them), then two of three brokers, down at '
                             'once for SECONDS (60 is the long variant; '
                             'default 0: no loss of quorum).')
    parser.add_argument('--seed', type=int, default=None)
    parser.add_argument('--workdir', default=None,
                        help='Where logs and files go (default: a new '
                             'temporary directory, kept).')
    args = parser.parse_args(argv)
    if args.cluster and args.db not in (None, 'mysql'):
        parser.error('--cluster runs on Galera: --db must be mysql')
    if args.network and not args.cluster:
        parser.error('--network needs --cluster')
    if args.quorum and not args.cluster:
        parser.error('--quorum needs --cluster')
    queues = args.queues or ('quorum' if args.network or args.quorum
                             else 'classic')
    workdir = args.workdir or tempfile.mkdtemp(prefix='barbican-chaos-')
    os.makedirs(workdir, exist_ok=True)
    # The servers started below keep their data in it (workdir/services
    # or workdir/cluster).
    chaos_services.make_reachable(workdir)
    print('chaos: logs in %s' % workdir, flush=True)
    if args.cluster:
        db = 'mysql'
        try:
            services = clusters = chaos_services.Clusters(
                workdir, network=args.network)
        except chaos_services.NetworkUnavailable as exc:
            print('chaos: skipped: %s' % exc, flush=True)
            return chaos_services.NETWORK_SKIP_STATUS
    else:
        db = args.db or 'postgresql'
        required = [chaos_services.TRANSPORT_VARIABLE]
        if chaos_services.url_variable(db):
            required.append(chaos_services.url_variable(db))
        services = chaos_services.Services(workdir, required)
        clusters = None
    try:
        report = run.run(db, args.orders, args.duration, workdir,
                         services, seed=args.seed,
                         log=lambda text: print(text, flush=True),
                         order_type=args.order_type, queues=queues,
                         clusters=clusters,
                         network=network.ALL if args.network else (),
                         quorum_seconds=args.quorum)
    finally:
        services.close()
    print(report.line(), flush=True)
    return 0 if report.ok else 1


if __name__ == '__main__':
    sys.exit(main())
