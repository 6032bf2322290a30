"""``worker.common.child_failures``: when a failing worker pool gives up.

The clock is a parameter: no test sleeps.
"""

import os
import subprocess
import sys
import textwrap

from worker.common import child_failures

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))))


class _Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _failures(limit=3, window=60):
    clock = _Clock()
    calls = []
    failures = child_failures.ChildFailures(
        limit, window, give_up=lambda: calls.append(clock.now), clock=clock)
    return failures, clock, calls


def test_it_gives_up_once_at_the_limit_within_the_window():
    failures, clock, calls = _failures(limit=3)
    for _ in range(2):
        failures.on_dead_worker('service', 0, 1)
        clock.now += 10
    assert not failures.gave_up and calls == []
    failures.on_dead_worker('service', 1, -9)
    assert failures.gave_up and calls == [1020.0]
    # Once: the processes that die during the stop change nothing.
    failures.on_dead_worker('service', 0, 1)
    assert calls == [1020.0]


def test_failures_further_apart_than_the_window_never_add_up():
    failures, clock, calls = _failures(limit=2, window=60)
    for _ in range(5):
        failures.on_dead_worker('service', 0, 1)
        clock.now += 61
    assert not failures.gave_up and calls == []


def test_a_process_that_exits_0_is_no_failure():
    failures, _, calls = _failures(limit=1)
    failures.on_dead_worker('service', 0, 0)
    assert not failures.gave_up and calls == []


# Run in a process of its own: cotyledon's ServiceManager sets signal
# handlers up, and allows one instance per process.
_WATCH = textwrap.dedent('''
    import worker  # noqa: F401 (the threading backend)
    from oslo_service import service
    from tests import config
    from worker.common import child_failures

    conf = config.make_conf(**{'worker.max_child_failures': 4})
    launcher = service.launch(conf, service.Service(), workers=2,
                              restart_method='mutate')
    manager = getattr(launcher, '_manager', None)
    assert manager is not None, 'no _manager'
    failures = child_failures.watch(launcher, conf)
    hooks = manager._hooks['dead_worker']
    assert [hook.__self__ for hook in hooks] == [failures], hooks
    print('hooked')
''')


def test_watch_hooks_into_the_launchers_process_manager():
    """oslo.service's threading launcher keeps cotyledon's ServiceManager
    as ``_manager``, whose ``dead_worker`` hooks ``watch`` adds to."""
    done = subprocess.run([sys.executable, '-c', _WATCH],
                          capture_output=True, text=True, timeout=60,
                          cwd=_ROOT)
    assert done.stdout.strip() == 'hooked', (
        'oslo.service or cotyledon changed: child_failures.watch() no '
        'longer hooks into the launcher\'s ServiceManager (_manager, '
        'register_hooks(on_dead_worker=)), and barbican-worker would fork '
        'failing processes for ever: %s' % done.stderr[-2000:])
