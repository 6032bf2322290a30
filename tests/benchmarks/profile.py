"""Where the time of a dispatch pass goes: py-spy on one pass of 10,000 rows.

``python -m tests.benchmarks --profile`` (or ``--only`` with it) runs one
``RetryManager.run_once`` over 10,000 due rows (SQLite, real RabbitMQ)
twice under py-spy attached to the benchmark process itself:

- wall time (``--idle``): every thread's stack, waiting included, so the
  main thread's share says what a pass waits on;
- GIL (``--gil``): only the thread holding the GIL, i.e. where the
  Python CPU time goes, whichever thread spends it.

Samples are put in categories (SQL, JSON decode, inspect.signature,
oslo.messaging serialisation, kombu/amqp publish, waiting for broker
confirms, thread hand-off ...) by the frames on their stack. The raw
collapsed stacks are written beside results.json for flame graphs.
"""

import collections
import datetime
import os
import signal
import subprocess
import sys
import time

from oslo_utils import timeutils

from scheduler import manager
from tests.benchmarks import broker
from tests.benchmarks import dispatch
from tests.benchmarks import env
from tests.benchmarks import seed

ROWS = 10000
PY_SPY = os.path.join(os.path.dirname(sys.executable), 'py-spy')

# (category, substrings of which one must be on the stack); first match
# wins, so the specific waits come before the libraries that contain them.
_CAST_THREAD_RULES = (
    ('cast: waiting for the broker confirm',
     ('basic_publish_confirm',), ('wait (amqp/abstract_channel',)),
    ('cast: connection pool', ('_drivers/pool.py',), ()),
    ('cast: message serialisation (JSON)',
     ('serialize_msg', 'jsonutils', 'json/'), ()),
    ('cast: logging', ('logging/',), ()),
    ('cast: kombu/amqp framing and socket send',
     ('kombu/', 'amqp/'), ()),
    ('cast: other oslo.messaging (ensure, locks, target)',
     ('oslo_messaging',), ()),
    ('cast thread idle (waiting for work)',
     ('concurrent/futures/thread.py',), ()),
)
_MAIN_THREAD_RULES = (
    ('main: SQL, reading a batch (due)', ('due (worker/db/retry_tasks',), ()),
    ('main: SQL, recovery queries', ('run (scheduler/recovery.py',), ()),
    ('main: SQL, renew + delete + mark dispatched',
     ('_batch (scheduler/dispatch.py',), ('sqlalchemy/', 'sqlite3',
                                          'psycopg2')),
    ('main: SQL, planning the next pass', ('plan (scheduler/planner.py',),
     ()),
    ('main: SQL, lock take/release', ('sqlalchemy/', 'sqlite3',
                                      'psycopg2'), ()),
    ('main: parse_retry, JSON decode', ('parse_retry',), ('json/',)),
    ('main: parse_retry, inspect.signature', ('parse_retry',),
     ('inspect.py',)),
    ('main: parse_retry, other', ('parse_retry',), ()),
    ('main: waiting for the casts of a batch', ('_cast_all',),
     ('wait (concurrent/futures', 'wait (threading.py')),
    ('main: handing casts to the executor (submit)', ('submit (',), ()),
)


def _matches(stack, rule):
    _, anyof, andany = rule
    return (any(s in stack for s in anyof) and
            (not andany or any(s in stack for s in andany)))


def classify(stack):
    """Category of one collapsed stack ('thread (id): name;frame;...')."""
    thread = stack.split(';', 1)[0]
    if 'retry-cast' in thread:
        rules, prefix = _CAST_THREAD_RULES, 'cast: other'
    elif 'MainThread' in thread:
        if 'run_once (scheduler' not in stack:
            return 'main: outside the pass (benchmark)'
        rules, prefix = _MAIN_THREAD_RULES, 'main: other'
    else:
        return 'other threads (broker heartbeats, py-spy start)'
    for rule in rules:
        if _matches(stack, rule):
            return rule[0]
    return prefix


def _group(stack):
    thread = stack.split(';', 1)[0]
    if 'retry-cast' in thread:
        return 'cast threads'
    if 'MainThread' in thread:
        return 'main thread'
    return 'other threads'


def summarise(raw_path):
    """Shares of samples by category, and the top self-time frames.

    ``groups`` holds each thread group's categories as shares of that
    group's samples (what one main thread or the cast threads spend their
    time on); ``categories`` holds shares of all samples (with ``--gil``:
    of the Python CPU time).
    """
    categories, leaves = collections.Counter(), collections.Counter()
    groups = collections.defaultdict(collections.Counter)
    total = 0
    with open(raw_path) as raw:
        for line in raw:
            stack, _, count = line.rstrip('\n').rpartition(' ')
            if not count.isdigit():
                continue
            count = int(count)
            total += count
            category = classify(stack)
            categories[category] += count
            groups[_group(stack)][category] += count
            thread = stack.split(';', 1)[0].split(': ', 1)[-1]
            leaves['%s | %s' % (thread.split('_')[0],
                                stack.rsplit(';', 1)[-1])] += count
    if not total:
        return {'samples': 0, 'categories': {}, 'groups': {},
                'top_frames': []}
    return {
        'samples': total,
        'categories': {name: count / total
                       for name, count in categories.most_common()},
        'groups': {group: {name: count / sum(counter.values())
                           for name, count in counter.most_common()}
                   for group, counter in groups.items()},
        'top_frames': [(frame, count / total)
                       for frame, count in leaves.most_common(15)],
    }


def _profiled_pass(database, api, conf, mode, raw_path):
    now = timeutils.utcnow()
    seed.load(database, ROWS, now - datetime.timedelta(minutes=1),
              spacing=0.001)
    spy = subprocess.Popen(
        [PY_SPY, 'record', '--pid', str(os.getpid()), '--rate', '250',
         '--format', 'raw', '--threads', '--nonblocking', mode,
         '--output', raw_path],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)  # py-spy attaches
    started = time.perf_counter()
    result = manager.RetryManager(conf, database, api).run_once(
        timeutils.utcnow())
    seconds = time.perf_counter() - started
    spy.send_signal(signal.SIGINT)
    _, errors = spy.communicate(timeout=60)
    if not os.path.exists(raw_path):
        raise RuntimeError('py-spy wrote nothing: %s' % errors.decode()[-500:])
    return result, seconds


def dispatch_pass(transport_url, workdir, output, log, backend='sqlite'):
    """Profile one pass over 10,000 rows; returns both summaries."""
    conf = dispatch.scheduler_conf()
    topic = env.new_topic()
    api = env.worker_api(transport_url, topic)
    figures = {'rows': ROWS, 'backend': backend}
    with env.database(backend, workdir) as (_, database), \
            broker.sink_queue(env.kombu_url(transport_url), topic):
        # Warm the connection pool as a running daemon's is.
        seed.load(database, 64, timeutils.utcnow())
        manager.RetryManager(conf, database, api).run_once(
            timeutils.utcnow())
        for mode, name in (('--idle', 'wall'), ('--gil', 'gil')):
            raw_path = os.path.join(output, 'profile_dispatch_%s.txt' % name)
            log('profile: one pass over %d rows (%s), py-spy %s', ROWS,
                backend, mode)
            result, seconds = _profiled_pass(database, api, conf, mode,
                                             raw_path)
            figures[name] = dict(summarise(raw_path), seconds=seconds,
                                 dispatched=result.dispatched,
                                 raw=raw_path)
    return figures


def format_summary(figures):
    """The profile as text, for the terminal."""
    lines = []
    data = figures['wall']
    lines.append('Wall time (py-spy --idle): pass of %d rows in %.2fs '
                 '(%.0f rows/s under the profiler)' % (
                     data['dispatched'], data['seconds'],
                     data['dispatched'] / data['seconds']))
    for group in ('main thread', 'cast threads'):
        lines.append('  %s:' % group)
        for category, share in data['groups'].get(group, {}).items():
            if share >= 0.005:
                lines.append('    %5.1f%%  %s' % (100 * share, category))
    data = figures['gil']
    lines.append('Python CPU time, whoever holds the GIL (py-spy --gil): '
                 'pass in %.2fs' % data['seconds'])
    for category, share in data['categories'].items():
        if share >= 0.005:
            lines.append('    %5.1f%%  %s' % (100 * share, category))
    lines.append('  top frames (GIL):')
    for frame, share in data['top_frames'][:10]:
        lines.append('    %5.1f%%  %s' % (100 * share, frame))
    return '\n'.join(lines)
