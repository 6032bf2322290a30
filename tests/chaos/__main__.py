"""``python -m tests.chaos``: see tests/chaos/__init__.py."""

import argparse
import os
import sys
import tempfile

from tests.chaos import run
from tests.chaos import services as chaos_services


def main(argv=None):
    """Parse the arguments, run the scenario, print the summary line."""
    parser = argparse.ArgumentParser(prog='python -m tests.chaos',
                                     description=__doc__)
    parser.add_argument('--db', choices=['sqlite', 'postgresql', 'mysql'],
                        default='postgresql')
    parser.add_argument('--orders', type=int, default=2000)
    parser.add_argument('--duration', type=int, default=180,
                        help='Seconds of faults.')
    parser.add_argument('--type', dest='order_type', default='certificate',
                        choices=sorted(run.ORDER_TYPES),
                        help='Order type: certificate (default), or fanout '
                             '(steps in parallel; the recorded runs also '
                             'prove one idempotency key per step).')
    parser.add_argument('--queues', default='classic',
                        choices=sorted(run.QUEUES),
                        help='RabbitMQ queues: classic (durable, the '
                             'default) or quorum.')
    parser.add_argument('--seed', type=int, default=None)
    parser.add_argument('--workdir', default=None,
                        help='Where logs and files go (default: a new '
                             'temporary directory, kept).')
    args = parser.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix='barbican-chaos-')
    os.makedirs(workdir, exist_ok=True)
    # The servers started below keep their data in it (workdir/services).
    chaos_services.make_reachable(workdir)
    print('chaos: logs in %s' % workdir, flush=True)
    required = [chaos_services.TRANSPORT_VARIABLE]
    if chaos_services.url_variable(args.db):
        required.append(chaos_services.url_variable(args.db))
    services = chaos_services.Services(workdir, required)
    try:
        report = run.run(args.db, args.orders, args.duration, workdir,
                         services, seed=args.seed,
                         log=lambda text: print(text, flush=True),
                         order_type=args.order_type, queues=args.queues)
    finally:
        services.close()
    print(report.line(), flush=True)
    return 0 if report.ok else 1


if __name__ == '__main__':
    sys.exit(main())
