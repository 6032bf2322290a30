"""barbican-worker: the RPC worker pool (``[worker] workers`` processes).

``--topic T`` makes a pool that serves ``T`` instead of ``[worker]
topic``: the steps of the order types whose ``[order_type:...] topic`` is
``T``.
"""

import sys

from oslo_config import cfg
from oslo_service import service

from worker.common import reports
from worker import conf as worker_conf
from worker.conf import worker as worker_options
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
    # The launcher's own; each process of the pool installs its own.
    reports.install(conf, worker_service.SERVICE_NAME)
    served = worker_service.WorkerService(conf, topic=conf.topic)
    launcher = service.launch(conf, served,
                              workers=conf.worker.workers,
                              restart_method='mutate')
    return launcher.wait()


if __name__ == '__main__':
    sys.exit(main())
