"""The Celery reference of target 2, run in a virtualenv of its own.

Celery never enters the project's virtualenv: on first use it is installed
into ``~/.cache/barbican-retry-bench/celery-venv`` (override with
``BARBICAN_RETRY_BENCH_CELERY_VENV``), and everything Celery does runs as
subprocesses of that interpreter: a tiny app module written to the work
directory, a publisher that sends N tasks with ``eta=T``, and a prefork
worker with as many processes as the product's worker pool gets.

Each task records ``index time`` in a shared file (one ``os.write`` on an
``O_APPEND`` descriptor, atomic for a short line), so lost and duplicated
tasks are counted the same way as the product's orders.
"""

import os
import signal
import subprocess
import time

import kombu

from tests.benchmarks import broker
from tests.benchmarks import peers

CELERY_VERSION = '5.7.0'
VENV_VARIABLE = 'BARBICAN_RETRY_BENCH_CELERY_VENV'

_APP = '''"""Celery app of the barbican-retry benchmark (generated)."""
import os
import time

from celery import Celery

app = Celery('brbench', broker=os.environ['BRBENCH_BROKER'])
app.conf.update(
    task_default_queue=os.environ['BRBENCH_QUEUE'],
    task_ignore_result=True,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)
_fd = None


@app.task(name='brbench.noop')
def noop(index):
    """The no-op: record that task ``index`` ran, and when."""
    global _fd
    if _fd is None:
        _fd = os.open(os.environ['BRBENCH_OUT'],
                      os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(_fd, b'%d %.6f\\n' % (index, time.time()))
'''

_PUBLISHER = '''"""Publish N no-op tasks due at epoch T (generated)."""
import datetime
import sys

from brbench_celery_app import noop

count, due = int(sys.argv[1]), float(sys.argv[2])
eta = datetime.datetime.fromtimestamp(due, datetime.timezone.utc)
for index in range(count):
    noop.apply_async((index,), eta=eta)
'''


def ensure_venv(log):
    """The Celery virtualenv (``peers.ensure_venv``); its ``python``."""
    return peers.ensure_venv('celery', 'celery', CELERY_VERSION,
                             ['celery==%s' % CELERY_VERSION], VENV_VARIABLE,
                             log)


def _queue_state(kombu_url, queue):
    """``(ready messages, consumers)`` of a queue, or None if missing."""
    with broker.connection(kombu_url, confirm=False) as conn:
        try:
            reply = conn.channel().queue_declare(queue, passive=True)
        except Exception:
            return None
    return reply.message_count, reply.consumer_count


def _delete_queue(kombu_url, queue):
    with broker.connection(kombu_url, confirm=False) as conn:
        channel = conn.channel()
        channel.queue_delete(queue)
        # Celery's default exchange for a queue is a direct one of its name.
        kombu.Exchange(queue, type='direct')(channel).delete()


def drain(kombu_url, count, processes, workdir, log, lead_seconds=None):
    """N tasks due at T, prefork worker of ``processes``: drain figures.

    T is far enough ahead that all tasks are published and delivered to
    the worker before it (checked: ``ready_at_T`` must be 0), so what is
    timed is the drain itself, from T to the last task's end, as for the
    product.
    """
    python = ensure_venv(log)
    queue = 'brbench_celery_%d' % os.getpid()
    out = workdir / 'celery-done.txt'
    (workdir / 'brbench_celery_app.py').write_text(_APP)
    (workdir / 'brbench_publish.py').write_text(_PUBLISHER)
    environ = dict(os.environ, BRBENCH_BROKER=kombu_url,
                   BRBENCH_QUEUE=queue, BRBENCH_OUT=str(out),
                   PYTHONPATH=str(workdir))
    celery = str(python.parent / 'celery')
    worker_log = open(workdir / 'celery-worker.log', 'w')
    worker = subprocess.Popen(
        [celery, '-A', 'brbench_celery_app', 'worker', '--pool', 'prefork',
         '--concurrency', str(processes), '--loglevel', 'WARNING',
         '--without-gossip', '--without-mingle', '--without-heartbeat',
         '--hostname', 'brbench-%d@localhost' % os.getpid()],
        cwd=str(workdir), env=environ, stdout=worker_log,
        stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            state = _queue_state(kombu_url, queue)
            if state and state[1] >= 1:
                break
            if worker.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError('Celery worker did not start; see %s'
                                   % worker_log.name)
            time.sleep(0.2)
        lead = lead_seconds or 3 + count / 400.0
        due = time.time() + lead
        log('celery: publishing %d eta tasks due in %.0fs', count, lead)
        subprocess.run([str(python), str(workdir / 'brbench_publish.py'),
                        str(count), repr(due)],
                       cwd=str(workdir), env=environ, check=True)
        while time.time() < due - 0.5:
            time.sleep(0.2)
        ready_at_due = _queue_state(kombu_url, queue)[0]
        deadline = time.monotonic() + lead + 120 + count / 50.0
        lines = []
        while time.monotonic() < deadline:
            if out.exists():
                lines = out.read_text().splitlines()
                if len(lines) >= count:
                    break
            time.sleep(0.25)
        time.sleep(1.0)  # room for a late duplicate to show up
        lines = out.read_text().splitlines() if out.exists() else []
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(30)
        worker_log.close()
        _delete_queue(kombu_url, queue)
    indexes = [int(line.split()[0]) for line in lines]
    stamps = [float(line.split()[1]) for line in lines]
    done = len(set(indexes))
    seconds = (max(stamps) - due) if stamps else float('nan')
    return {
        'tasks': count, 'processes': processes, 'done': done,
        'lost': count - done, 'duplicated': len(indexes) - done,
        'seconds': seconds, 'rate': done / seconds if stamps else 0.0,
        'first_after_due': (min(stamps) - due) if stamps else None,
        'ready_at_due': ready_at_due, 'celery': CELERY_VERSION,
    }
