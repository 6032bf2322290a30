"""Run one oslo.service service in this process, as systemd expects.

oslo.service's threading backend (cotyledon) forks a master and a child
even for one process: a second interpreter with every module loaded, about
65 MB, only to watch the first. barbican-retry runs one service and needs
no such watcher (systemd restarts it), so it runs here, in the main
process, and handles the signals itself as the launcher would:

- SIGTERM (and SIGINT): stop the service gracefully (a pass finishes its
  batch and releases the lock), exit 0; if that takes longer than
  ``[DEFAULT] graceful_shutdown_timeout``, exit 1 at once, as oslo.service
  does.
- SIGHUP: ``service.reload(conf)``: between two passes, re-read the
  configuration files (``mutate``: the mutable options take their new
  values) and plan the next pass from them, in place.

The signals are blocked in every thread and taken with ``sigwait`` by the
main thread, so no handler runs in the middle of a pass.
"""

import os
import signal
import threading

from oslo_log import log as logging
from oslo_service import service as oslo_service
from oslo_service import systemd

LOG = logging.getLogger(__name__)

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_SIGNALS = _STOP_SIGNALS + (signal.SIGHUP,)


def register_opts(conf):
    """Register oslo.service's own options (``graceful_shutdown_timeout``
    among them), as its launcher does."""
    for group, opts in oslo_service.list_opts():
        conf.register_opts(opts, group=group)


def run(conf, service):
    """Start ``service``, serve signals until told to stop; exit status.

    ``service`` is an oslo.service ``Service`` with a ``reload(conf)``.

    Raises what ``service.start()`` raises: a daemon that cannot start
    exits without telling systemd it is ready.
    """
    # Before any thread exists: every thread started from here on (the
    # service's, the libraries') inherits the mask.
    signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    service.start()
    systemd.notify_once()
    while True:
        signum = signal.sigwait(_SIGNALS)
        if signum in _STOP_SIGNALS:
            LOG.info('Caught %s, stopping', signal.Signals(signum).name)
            return _stop(service, conf.graceful_shutdown_timeout)
        LOG.info('Caught SIGHUP, reloading the configuration')
        try:
            service.reload(conf)
        except Exception:
            # The daemon goes on with the configuration it has.
            LOG.exception('Reload failed')


def _stop(service, timeout):
    done = threading.Event()

    def stop():
        service.stop()
        service.wait()
        done.set()

    threading.Thread(target=stop, name='graceful-stop', daemon=True).start()
    if done.wait(timeout or None):
        return 0
    LOG.error('Graceful shutdown took longer than %ds; exiting', timeout)
    # The service's threads are still running: only _exit ends them.
    os._exit(1)
