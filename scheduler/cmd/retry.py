"""barbican-retry: the retry-scheduler daemon.

systemd runs it through ``bin/barbican-retry.sh``, which ``exec``s this
console script so that signals reach it: SIGTERM stops it cleanly, SIGHUP
reloads the mutable options.
"""

import sys

from oslo_config import cfg
from oslo_service import service

from scheduler import conf as scheduler_conf
from scheduler import service as scheduler_service
from worker import conf as worker_conf


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
    launcher = service.launch(conf, scheduler_service.SchedulerService(conf),
                              workers=1, restart_method='mutate')
    return launcher.wait()


if __name__ == '__main__':
    sys.exit(main())
