"""Counts a ``barbican-worker`` process's statements for the benchmark.

Imported at interpreter start from the ``PYTHONPATH`` that
``tests.benchmarks.statements.enable`` sets; does nothing in any other
process (the peers' interpreters, the daemon, tools). It shadows the
system's own ``sitecustomize`` in those processes only.
"""

import os
import sys


def _install(directory):
    from sqlalchemy import engine
    from sqlalchemy import event

    counts = [0, 0]
    # One file per process id: the pool's forked children count apart.
    opened = {}

    def count(conn, cursor, statement, parameters, context, executemany):
        counts[0] += 1
        if executemany:
            counts[1] += len(parameters)
        pid = os.getpid()
        if pid not in opened:
            counts[:] = [1, len(parameters) if executemany else 0]
            opened.clear()
            opened[pid] = os.open(os.path.join(directory, str(pid)),
                                  os.O_WRONLY | os.O_CREAT, 0o644)
        os.pwrite(opened[pid], b'%20d %20d\n' % tuple(counts), 0)
    event.listen(engine.Engine, 'before_cursor_execute', count)


if os.environ.get('BARBICAN_RETRY_BENCH_STATEMENTS_DIR') and \
        sys.argv and sys.argv[0].endswith('barbican-worker'):
    _install(os.environ['BARBICAN_RETRY_BENCH_STATEMENTS_DIR'])
