"""barbican-retry-keystone-listener: ends the work of the projects
deleted in Keystone (``worker.keystone_listener``).

As Barbican's barbican-keystone-listener, one process per host is
enough; several share the notifications (``[keystone_listener]
pool_name``). oslo.service's launcher runs it, as barbican-worker's pool:
SIGTERM stops it after the notification under way, SIGHUP re-reads the
mutable options.
"""

import sys

from oslo_config import cfg
from oslo_service import service

from worker.common import reports
from worker import conf as worker_conf
from worker.db import readiness
from worker.keystone_listener import service as listener_service


def main(argv=None):
    """Parse the configuration, check the database, and listen."""
    conf = cfg.CONF
    argv = sys.argv[1:] if argv is None else argv
    worker_conf.load(conf, argv, listener_service.SERVICE_NAME)
    worker_conf.refuse_invalid_reloads(conf, argv,
                                       listener_service.SERVICE_NAME)
    # A missing or old schema would fail every notification.
    readiness.check(conf, listener_service.SERVICE_NAME)
    reports.install(conf, listener_service.SERVICE_NAME)
    launcher = service.launch(
        conf, listener_service.KeystoneListenerService(conf), workers=1,
        restart_method='mutate')
    try:
        return launcher.wait()
    except SystemExit as exc:
        # cotyledon's master leaves by sys.exit(0) once stopped.
        return exc.code


if __name__ == '__main__':
    sys.exit(main())
