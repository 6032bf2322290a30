"""The one-process runner of barbican-retry (scheduler.in_process): a
service whose start or stop raises still lets the process end."""

import threading

from oslo_config import cfg

from scheduler import in_process

# What a test waits at most for a thread that should end.
PATIENCE = 5.0


class _Exited(Exception):
    """``in_process._exit`` was called (with ``status``)."""

    def __init__(self, status):
        super().__init__(status)
        self.status = status


class _Service:
    """A service whose ``start`` and ``stop`` raise, as one whose
    transport could not be built may."""

    def __init__(self):
        self.waited = False

    def start(self):
        raise RuntimeError('no transport')

    def stop(self):
        raise RuntimeError('nothing to stop')

    def wait(self):
        self.waited = True


def _exit(status):
    raise _Exited(status)


def _conf():
    conf = cfg.ConfigOpts()
    in_process.register_opts(conf)
    conf([], project='barbican-retry')
    # No limit: the stop is waited for until it ends.
    conf.set_override('graceful_shutdown_timeout', 0)
    return conf


def test_a_stop_that_raises_ends_and_is_logged(caplog):
    statuses = []
    thread = threading.Thread(
        target=lambda: statuses.append(in_process._stop(_Service(), 0)),
        daemon=True)
    thread.start()
    thread.join(PATIENCE)
    assert not thread.is_alive()
    assert statuses == [1]
    assert 'raised while it stopped: nothing to stop' in caplog.text


def test_a_service_that_cannot_start_nor_stop_exits(monkeypatch, caplog):
    monkeypatch.setattr(in_process, '_exit', _exit)
    exited = []

    def run():
        # In a thread of its own: the signals it blocks are this
        # thread's only.
        try:
            in_process.run(_conf(), _Service())
        except _Exited as exc:
            exited.append(exc.status)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(PATIENCE)
    assert not thread.is_alive()
    assert exited == [1]
    assert 'Could not start, exiting: no transport' in caplog.text
    assert 'raised while it stopped' in caplog.text
