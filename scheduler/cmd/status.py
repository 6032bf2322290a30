"""barbican-retry-status: ``upgrade check`` (oslo.upgradecheck).

The checks are ``scheduler.manage.upgrade_checks``.
"""

import sys

from oslo_config import cfg
from oslo_upgradecheck import upgradecheck

from scheduler import conf as scheduler_conf
from scheduler.manage import upgrade_checks
from worker import conf as worker_conf


def main(argv=None):
    """Run ``barbican-retry-status upgrade check``."""
    conf = cfg.CONF
    worker_conf.register_opts(conf)
    scheduler_conf.register_opts(conf)
    return upgradecheck.main(conf, project='barbican-retry',
                             upgrade_command=upgrade_checks.Checks(conf),
                             argv=sys.argv[1:] if argv is None else argv)


if __name__ == '__main__':
    sys.exit(main())
