"""barbican-worker: the RPC worker pool (``[worker] workers`` processes).

``--topic T`` makes a pool that serves ``T`` instead of ``[worker]
topic``: the steps of the order types whose ``[order_type:...] topic`` is
``T``.
"""

import sys

from oslo_config import cfg
from oslo_service import service

from worker.common import child_failures
from worker.common import reports
from worker import conf as worker_conf
from worker.conf import sections
from worker.conf import worker as worker_options
from worker.db import readiness
from worker import service as worker_service


def main(argv=None):
    """Parse the configuration and run the worker processes."""
    conf = cfg.CONF
    argv = sys.argv[1:] if argv is None else argv
    command_line = (worker_options.register_cli_opts,)
    worker_conf.load(conf, argv, 'barbican-worker',
                     extra_register=command_line)
    worker_conf.refuse_invalid_reloads(conf, argv, 'barbican-worker',
                                       extra_register=command_line)
    # In the master, before any fork: each process would fail the same
    # way. The engine it opens is disposed of before the fork.
    readiness.check(conf, 'barbican-worker')
    sections.warn_unknown(conf)
    # The launcher's own; each process of the pool installs its own.
    reports.install(conf, worker_service.SERVICE_NAME)
    served = worker_service.WorkerService(conf, topic=conf.topic)
    launcher = service.launch(conf, served,
                              workers=conf.worker.workers,
                              restart_method='mutate')
    failures = child_failures.watch(launcher, conf)
    try:
        status = launcher.wait()
    except SystemExit as exc:
        # cotyledon's master leaves by sys.exit(0) once stopped.
        status = exc.code
    # Stopped by ChildFailures as on SIGTERM: a failure all the same.
    return 1 if failures.gave_up else status


if __name__ == '__main__':
    sys.exit(main())
