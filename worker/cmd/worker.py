"""barbican-worker: the RPC worker pool (``[worker] workers`` processes)."""

import sys

from oslo_config import cfg
from oslo_service import service

from worker import conf as worker_conf
from worker import service as worker_service


def main(argv=None):
    """Parse the configuration and run the worker processes."""
    conf = cfg.CONF
    argv = sys.argv[1:] if argv is None else argv
    worker_conf.load(conf, argv, 'barbican-worker')
    worker_conf.refuse_invalid_reloads(conf, argv, 'barbican-worker')
    launcher = service.launch(conf, worker_service.WorkerService(conf),
                              workers=conf.worker.workers,
                              restart_method='mutate')
    return launcher.wait()


if __name__ == '__main__':
    sys.exit(main())
