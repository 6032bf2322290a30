"""The ``barbican-retry-manage`` application (cliff).

Its commands are the entry points of ``barbican_retry.manage.commands``
(setup.cfg), one module of this package per noun. Every listing takes
``-f json|table|csv|value|yaml`` from cliff.
"""

import logging

from cliff import app
from cliff import commandmanager
from oslo_config import cfg

from scheduler import conf as scheduler_conf
from scheduler.manage import connection
from scheduler.manage import display
from worker.common import clock
from worker import conf as worker_conf
from worker.notifications import bus
from worker import rpc
from worker import rpcapi
from worker import tracing


PROG = connection.PROG


class ErrorLine(logging.Formatter):
    """An error as one line, ``barbican-retry-manage: error: <message>``,
    escaped (``display.escape``); with ``--debug``, cliff logs it with
    its traceback, which names the exception's class."""

    def format(self, record):
        """The line; the traceback after it if the record has one."""
        message = record.getMessage()
        if not message and record.exc_info:
            # An exception without a message (KeyError()): its class.
            message = record.exc_info[0].__name__
        line = '%s: error: %s' % (PROG, display.escape(message))
        if record.exc_info:
            line = '%s\n%s' % (display.escape(
                self.formatException(record.exc_info), keep='\n'), line)
        return line


def error_logger(stream):
    """The logger cliff reports a command's error to (``App.LOG``): a
    line on ``stream``, not a log line (timestamp, pid, request id) of
    oslo.log's handlers."""
    # Not from logging.getLogger: a logger of this app only, which no
    # handler of the root logger (oslo.log's) sees.
    logger = logging.Logger(PROG)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(ErrorLine())
    logger.addHandler(handler)
    return logger


class ManageApp(app.App):
    """The ``barbican-retry-manage`` application.

    The database and the RPC client are built on first use, so commands
    that need neither (``--help``, ``order type list``) work without a
    database or broker.
    """

    #: Its name in usage and messages, however it was started (cliff's
    #: default is the script's file name: "manage" under python -m).
    NAME = PROG

    def __init__(self):
        super().__init__(
            description='barbican-retry operator commands',
            version='1',
            command_manager=commandmanager.CommandManager(
                'barbican_retry.manage.commands'),
            deferred_help=True)
        self.LOG = error_logger(self.stderr)
        self.conf = None
        self._database = None
        self._transport = None
        self._announcer = None
        self._announcer_built = False
        self._clock = None
        self._config_args = []

    def build_option_parser(self, description, version, argparse_kwargs=None):
        """Add oslo.config's ``--config-file`` and ``--config-dir``."""
        parser = super().build_option_parser(description, version,
                                             argparse_kwargs)
        parser.add_argument('--config-file', action='append', default=[],
                            help='Configuration file (may be repeated).')
        parser.add_argument('--config-dir', action='append', default=[],
                            help='Directory of *.conf files.')
        return parser

    def initialize_app(self, argv):
        """Load the configuration named on the command line."""
        args = []
        for path in self.options.config_file:
            args += ['--config-file', path]
        for path in self.options.config_dir:
            args += ['--config-dir', path]
        # Kept for the commands that a refusal suggests.
        self._config_args = args
        # NOTE: the global CONF, because oslo.messaging registers some
        # of its options there only.
        self.conf = worker_conf.load(cfg.CONF, args,
                                     'barbican-retry-manage',
                                     (scheduler_conf.register_opts,),
                                     log_to_stderr=True)
        # "order create" starts its orders' traces here.
        tracing.configure(self.conf, 'barbican-retry-manage')

    @property
    def database(self):
        """The database of ``[database] connection``, migrated.

        Exits with a message naming what to do when the option is not
        set, its SQLite file does not exist, or its schema is missing or
        older than this code's.
        """
        return self.open_database()

    def open_database(self, create=False, migrated=True):
        """Build the database on first use (``connection.open_database``).

        The ``db`` commands pass ``migrated=False``, and ``db upgrade``
        ``create=True``: they are how the schema gets there.
        """
        if self._database is None:
            self._database = connection.open_database(
                self.conf, self._config_args, create=create,
                migrated=migrated)
        return self._database

    def now(self):
        """The database server's time now (naive UTC).

        Commands write and compare times that the daemons compare too:
        this host's clock is measured against the database's once, at the
        first call, as the daemons do at each heartbeat.
        """
        if self._clock is None:
            self._clock = clock.measured(self.database,
                                         self.conf.max_clock_offset_seconds)
        return self._clock.now()

    def worker_api(self):
        """An RPC client of the worker pool (each order type's topic)."""
        if self._transport is None:
            self._transport = rpc.get_transport(self.conf)
        return rpcapi.WorkerAPI.from_conf(self.conf, self._transport)

    def announcer(self):
        """The announcer of orders on the bus (``worker.notifications.bus``),
        or None without ``[oslo_messaging_notifications] driver``."""
        if not self._announcer_built:
            self._announcer_built = True
            self._announcer = bus.from_conf(self.conf)
        return self._announcer

    def clean_up(self, cmd, result, err):
        """Close connections before exiting; send the announcements
        still queued (``bus.Announcer.close``)."""
        if self._announcer is not None:
            self._announcer.close()
        if self._transport is not None:
            self._transport.cleanup()
        if self._database is not None:
            self._database.dispose()
        tracing.flush()
