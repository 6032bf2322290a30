"""Configuration options of the worker side, and the registration helper.

Options are registered on a ``ConfigOpts`` passed in, never at import time,
so that tests can build isolated configurations and so that nothing reads
``CONF`` before the command line has been parsed.
"""

from oslo_config import cfg
from oslo_log import log as logging

from worker.conf import api_limits
from worker.conf import database
from worker.conf import default
from worker.conf import keystone_listener
from worker.conf import metrics
from worker.conf import notifications
from worker.conf import order_types
from worker.conf import quota
from worker.conf import reports
from worker.conf import resources
from worker.conf import simple_certificate
from worker.conf import tracing
from worker.conf import worker

LOG = logging.getLogger(__name__)

#: What a configuration file must look like, for the error that says it
#: does not.
_INI_FORMAT = ('expected an INI file of UTF-8 text: [section] lines, each '
               'followed by name = value lines')

_MODULES = (default, database, worker, simple_certificate, metrics,
            notifications, order_types, resources, tracing, api_limits,
            keystone_listener, quota)


def validate(conf):
    """Check what spans options; raises ValueError naming them."""
    default.validate(conf)
    notifications.validate(conf)
    resources.validate(conf)
    tracing.validate(conf)


def register_opts(conf):
    """Register every worker-side option group on ``conf``, and
    oslo.reports' ``[oslo_reports]`` (``worker.conf.reports``)."""
    for module in _MODULES:
        module.register_opts(conf)
    reports.register_opts(conf)


def check_values(conf):
    """Read every registered option once, so a bad value fails now.

    oslo.config converts values lazily, at first use; a daemon would
    otherwise start and fail at its first pass.

    :raises oslo_config.cfg.Error: naming the option and the bad value.
    """
    for name in list(conf):
        value = conf[name]
        if isinstance(value, cfg.ConfigOpts.GroupAttr):
            for opt_name in list(value):
                value[opt_name]


def load(conf, argv, prog, extra_register=(), log_to_stderr=False):
    """Register options, parse ``argv`` and config files, check values.

    Exits with a message naming the option when a value is invalid.

    :param extra_register: more ``register_opts(conf)`` callables (the
        scheduler's options, for instance).
    :param log_to_stderr: log to stderr unless a log file is configured
        (command-line tools keep stdout for their output).
    """
    register_opts(conf)
    for register in extra_register:
        register(conf)
    logging.register_options(conf)
    if log_to_stderr:
        conf.set_default('use_stderr', True)
    try:
        conf(argv, project='barbican-retry', prog=prog)
    except (cfg.Error, UnicodeDecodeError) as exc:
        # A file that is not INI, or not text: one line, not a traceback.
        raise SystemExit('%s: cannot read the configuration: %s (%s)'
                         % (prog, exc, _INI_FORMAT))
    resources.register_found(conf)
    try:
        check_values(conf)
        validate(conf)
    except (cfg.Error, ValueError) as exc:
        raise SystemExit('%s: invalid configuration: %s' % (prog, exc))
    logging.setup(conf, 'barbican-retry')
    return conf


def refuse_invalid_reloads(conf, argv, prog, extra_register=(), checks=()):
    """Make SIGHUP keep the running configuration when the new one is bad.

    On SIGHUP the launcher (cotyledon's master for barbican-worker,
    ``scheduler.in_process`` for barbican-retry) calls
    ``conf.mutate_config_files()``, which takes the new values without
    converting them: an out-of-range value would crash every restarted
    child, or the running timer, while the unit looks healthy. The files
    are parsed and checked in a scratch ``ConfigOpts`` first.

    :param checks: more ``check(conf)`` callables raising ValueError.
    """
    mutate = conf.mutate_config_files

    def checked_mutate():
        candidate = cfg.ConfigOpts()
        register_opts(candidate)
        for register in extra_register:
            register(candidate)
        logging.register_options(candidate)
        try:
            candidate(argv, project='barbican-retry', prog=prog)
            resources.register_found(candidate)
            check_values(candidate)
            validate(candidate)
            for check in checks:
                check(candidate)
        except (cfg.Error, ValueError, SystemExit) as exc:
            LOG.error('Configuration reload refused, the running '
                      'configuration stays in force: %s', exc)
            return {}
        changed = mutate()
        # A [resource:PREFIX] group new in the files.
        resources.register_found(conf)
        return changed

    conf.mutate_config_files = checked_mutate
