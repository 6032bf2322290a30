"""The database statements a worker pool sends, counted by its driver
(issue 32, part 5).

``enable`` puts a ``sitecustomize`` module (``statements_hook/``) on the
``PYTHONPATH`` of the processes the benchmark starts afterwards; in a
``barbican-worker`` process (and only there) it listens to SQLAlchemy's
``before_cursor_execute`` on every engine and keeps two counts in a file
of its own process id: statements executed (an ``executemany`` counts
once, as the driver is called once) and the rows of the
``executemany`` calls (on MariaDB, PyMySQL sends one round trip per row
of those). ``totals`` sums every process's file, so that
``procs.PoolWatch`` reads them at the start and the end of a measurement.

Why the driver's count rather than PostgreSQL's ``pg_stat_statements``:
it needs ``shared_preload_libraries`` on the server that every functional
test shares, counts every client of the server (the benchmark's own
polling too), and there is no such view on MariaDB. The cost: a
``pwrite`` of 42 bytes per statement in the worker processes, a few
microseconds beside a statement's round trip.
"""

import os
import pathlib

#: The directory of the counters; set in the environment by ``enable``.
VARIABLE = 'BARBICAN_RETRY_BENCH_STATEMENTS_DIR'
_HOOK = pathlib.Path(__file__).with_name('statements_hook')


def enable(workdir):
    """Count the statements of the worker processes started from now
    on, in ``workdir/statements``."""
    directory = pathlib.Path(workdir) / 'statements'
    directory.mkdir(exist_ok=True)
    os.environ[VARIABLE] = str(directory)
    os.environ['PYTHONPATH'] = os.pathsep.join(
        [str(_HOOK)] + ([os.environ['PYTHONPATH']]
                        if os.environ.get('PYTHONPATH') else []))


def totals():
    """``(statements, executemany rows)`` of every counted process so
    far, or None when counting is off."""
    directory = os.environ.get(VARIABLE)
    if not directory:
        return None
    statements = rows = 0
    for path in pathlib.Path(directory).iterdir():
        fields = path.read_text().split()
        if len(fields) == 2:
            statements += int(fields[0])
            rows += int(fields[1])
    return statements, rows


def per_step(before, after, steps):
    """The figures of ``PoolWatch``: statements and executemany rows per
    step between two ``totals``; empty when counting is off."""
    if before is None or after is None:
        return {}
    statements, rows = (after[0] - before[0], after[1] - before[1])
    return {'statements': statements, 'executemany_rows': rows,
            'statements_per_step': statements / steps if steps
            else float('nan'),
            'executemany_rows_per_step': rows / steps if steps
            else float('nan')}
