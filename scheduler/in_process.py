"""Run one oslo.service service in this process, as systemd expects.

oslo.service's threading backend (cotyledon) forks a master and a child
even for one process: a second interpreter with every module loaded, about
65 MB, only to watch the first. barbican-retry runs one service and needs
no such watcher (systemd restarts it), so it runs here, in the main
process, and handles the signals itself as the launcher would:

- SIGTERM (and SIGINT): stop the service gracefully (a pass finishes its
  batch and releases the lock), exit 0 (1 if the stop raised, logged);
  if that takes longer than ``[DEFAULT] graceful_shutdown_timeout``, exit
  1 at once, as oslo.service does.
- SIGHUP: ``service.reload(conf)``: between two passes, re-read the
  configuration files (``mutate``: the mutable options take their new
  values) and plan the next pass from them, in place.

- SIGUSR2: call the handler set for it (oslo.reports' Guru Meditation
  Report, ``worker.common.reports``) at once. A Python handler runs only
  in the main thread, between two bytecodes; the main thread waits in
  ``sigwait``, a C call, so an unblocked SIGUSR2 would wait there for the
  next signal of the set.

The signals are blocked in every thread and taken with ``sigwait`` by the
main thread, so no handler runs in the middle of a pass.

A service whose ``start()`` raises is stopped (its timers, the heartbeat
among them, were started before the failure) and the process exits 1
at once: its threads would otherwise keep it alive, heartbeating, and
deaf to SIGTERM, which every thread blocks.
"""

import logging as logging_std
import os
import signal
import sys
import threading

from oslo_log import log as logging
from oslo_service import service as oslo_service
from oslo_service import systemd

LOG = logging.getLogger(__name__)

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
_SIGNALS = _STOP_SIGNALS + (signal.SIGHUP, signal.SIGUSR2)


def register_opts(conf):
    """Register oslo.service's own options (``graceful_shutdown_timeout``
    among them), as its launcher does."""
    for group, opts in oslo_service.list_opts():
        conf.register_opts(opts, group=group)


def run(conf, service):
    """Start ``service``, serve signals until told to stop; exit status.

    ``service`` is an oslo.service ``Service`` with a ``reload(conf)``.

    A service whose ``start()`` raises is stopped and the process exits
    1 (``os._exit``), without telling systemd it is ready.
    """
    # Before any thread exists: every thread started from here on (the
    # service's, the libraries') inherits the mask.
    signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        service.start()
    except Exception as exc:
        LOG.critical('Could not start, exiting: %s', exc, exc_info=True)
        _stop(service, conf.graceful_shutdown_timeout)
        _exit(1)
    systemd.notify_once()
    while True:
        signum = signal.sigwait(_SIGNALS)
        if signum == signal.SIGUSR2:
            _report(signum)
            continue
        if signum in _STOP_SIGNALS:
            LOG.info('Caught %s, stopping', signal.Signals(signum).name)
            return _stop(service, conf.graceful_shutdown_timeout)
        LOG.info('Caught SIGHUP, reloading the configuration')
        try:
            service.reload(conf)
        except Exception:
            # The daemon goes on with the configuration it has.
            LOG.exception('Reload failed')


def _report(signum):
    """Run the Python handler of ``signum`` (a Guru Meditation Report),
    as the interpreter would have, had the signal not been blocked."""
    handler = signal.getsignal(signum)
    if not callable(handler):
        # [oslo_reports] file_event_handler set: the file triggers them.
        LOG.info('Caught %s; no report is written on it',
                 signal.Signals(signum).name)
        return
    try:
        handler(signum, sys._getframe())
    except Exception:
        LOG.exception('The handler of %s failed', signal.Signals(signum).name)


def _exit(status):
    """Leave at once with ``status``, the log written: the service's
    threads may still run, and only ``os._exit`` ends them."""
    logging_std.shutdown()
    os._exit(status)


def _stop(service, timeout):
    """Stop ``service`` and wait for it, within ``timeout`` seconds (0:
    no limit); the exit status: 1 if the stop raised.

    The stop ends whether or not it raised: with no limit, a stop that
    raised before it was done would otherwise be waited for for ever.
    """
    done = threading.Event()
    failed = []

    def stop():
        try:
            service.stop()
            service.wait()
        except Exception as exc:
            LOG.error('The service raised while it stopped: %s', exc,
                      exc_info=exc)
            failed.append(exc)
        finally:
            done.set()

    threading.Thread(target=stop, name='graceful-stop', daemon=True).start()
    if done.wait(timeout or None):
        return 1 if failed else 0
    LOG.error('Graceful shutdown took longer than %ds; exiting', timeout)
    # The service's threads are still running.
    _exit(1)
