"""Guru Meditation Reports (oslo.reports) of barbican-worker and
barbican-retry, as upstream's barbican-worker and barbican-retry install.

``install`` sets oslo.reports' handler up
(``TextGuruMeditation.setup_autorun``): SIGUSR2 writes a report (its
package, every thread's stack, its processes and its configuration) to a
file named ``<service>.<pid>_gurumeditation_<time>`` in ``[oslo_reports]
log_dir``, or to stderr without one. With ``[oslo_reports]
file_event_handler`` set, a change of that file's modification time does
instead (a thread polls it every ``file_event_handler_interval``
seconds), and SIGUSR2 is left alone.

A signal handler can be set in the main thread only, and the processes
of the worker pool run their service in another thread: the launcher
sets it before it forks, and each process inherits it. The file
trigger's thread does not survive a fork: each process of the pool
starts its own (``WorkerService.start``). The pid in the report's name is
the pid of the process that writes it, so that the reports of one pool,
which a file trigger asks for at the same second, do not overwrite each
other.
"""

import os
import threading

from oslo_log import log as logging
from pbr import version

LOG = logging.getLogger(__name__)

#: The version the report's Package section shows.
VERSION = version.VersionInfo('barbican-retry')

# The pid ``install`` last set the handler up in: a pool of one process
# may run its service in the launcher's process.
_installed_in = None


class ProcessName:
    """A service's name that reads, when a report's file is named, as
    ``<service>.<pid>`` of the process writing it (oslo.reports formats
    the name it was given into the file's name)."""

    def __init__(self, service_name):
        self.service_name = service_name

    def __format__(self, spec):
        return format(str(self), spec)

    def __str__(self):
        return '%s.%d' % (self.service_name, os.getpid())


def install(conf, service_name):
    """Set the report's trigger up in this process, once.

    Call it in the main thread before the pool forks, and again in each
    process of the pool (which then starts the file trigger's thread,
    if there is one, and otherwise keeps the handler it inherited).

    :param conf: holds ``[oslo_reports]`` (``worker.conf.register_opts``
        registers it).
    :param service_name: ``barbican-worker`` or ``barbican-retry``.
    """
    global _installed_in
    if _installed_in == os.getpid():
        return
    by_file = bool(conf.oslo_reports.file_event_handler)
    if not by_file and threading.current_thread() is not \
            threading.main_thread():
        # A process of the pool: the launcher's handler is its already.
        return
    _installed_in = os.getpid()
    # Imported here, by the daemons only: it loads psutil and greenlet
    # (for a section of green threads), about 2.4 MB, which the operator
    # commands and every import of worker.conf need not pay for.
    from oslo_reports import guru_meditation_report
    try:
        guru_meditation_report.TextGuruMeditation.setup_autorun(
            VERSION, service_name=ProcessName(service_name), conf=conf)
    except OSError as exc:
        # The trigger file is missing or unreadable: the process runs on,
        # without reports, and says why.
        LOG.error('No Guru Meditation Reports: [oslo_reports] '
                  'file_event_handler %s: %s',
                  conf.oslo_reports.file_event_handler, exc)
