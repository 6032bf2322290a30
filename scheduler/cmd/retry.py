"""barbican-retry: the retry-scheduler daemon.

systemd runs it through ``bin/barbican-retry.sh``, which ``exec``s this
console script so that signals reach it: SIGTERM stops it cleanly, SIGHUP
reloads the mutable options. It runs in one process
(``scheduler.in_process``): one service needs no launcher process beside
it.
"""

import sys

from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler import in_process
from scheduler import service as scheduler_service
from worker.common import reports
from worker import conf as worker_conf
from worker.conf import sections
from worker.db import readiness


def main(argv=None):
    """Parse the configuration, check it, and run the daemon."""
    conf = cfg.CONF
    argv = sys.argv[1:] if argv is None else argv
    worker_conf.load(conf, argv, 'barbican-retry',
                     (scheduler_conf.register_opts,))
    try:
        scheduler_conf.validate(conf)
    except ValueError as exc:
        raise SystemExit('barbican-retry: invalid configuration: %s' % exc)
    worker_conf.refuse_invalid_reloads(
        conf, argv, 'barbican-retry', (scheduler_conf.register_opts,),
        (scheduler_conf.validate,))
    # Before anything starts: a missing or old schema fails every pass.
    readiness.check(conf, 'barbican-retry')
    sections.warn_unknown(conf)
    in_process.register_opts(conf)
    reports.install(conf, 'barbican-retry')
    return in_process.run(conf, scheduler_service.SchedulerService(conf))


if __name__ == '__main__':
    sys.exit(main())
