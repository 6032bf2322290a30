"""The Procrastinate peer of the worker-pool figure (issue 12, target 2).

Procrastinate is a job queue on PostgreSQL alone: jobs are rows, workers
take them with one UPDATE each and are woken by LISTEN/NOTIFY. It runs the
same work as our certificate orders, on the same PostgreSQL server: each
order is a job ``request`` that writes its order's row and defers a job
``check``, which writes the row ACTIVE. Two jobs in sequence, each
recording its result in the database, as our two steps do.

It runs in a virtualenv of its own (``peers``), from an app module written
to the work directory, with ``processes`` worker processes of
``CONCURRENCY`` jobs at once each (our worker processes run 16 steps at
once). Timed as ours: workers up and waiting, then the N ``request`` jobs
deferred in one batch, from that moment to the last order ACTIVE.
"""

import argparse
import os
import subprocess
import sys
import time
import uuid

import sqlalchemy as sa

from tests.benchmarks import peers

VERSION = '3.10.0'
VENV_VARIABLE = 'BARBICAN_RETRY_BENCH_PROCRASTINATE_VENV'
CONCURRENCY = 16

_APP = '''"""Procrastinate app of the barbican-retry benchmark (generated)."""
import os

import procrastinate
import psycopg_pool

app = procrastinate.App(connector=procrastinate.PsycopgConnector(
    conninfo=os.environ['BRBENCH_CONNINFO']))
_pool = None


async def _write(order_id, status):
    global _pool
    if _pool is None:
        _pool = psycopg_pool.AsyncConnectionPool(
            os.environ['BRBENCH_CONNINFO'], min_size=1, max_size=%d,
            open=False)
        await _pool.open()
    async with _pool.connection() as connection:
        await connection.execute(
            'UPDATE brbench_orders SET status = %%s, runs = runs + 1 '
            'WHERE id = %%s', (status, order_id))


@app.task(name='request')
async def request(order_id):
    """The first step: record it, then defer the second."""
    await _write(order_id, 'requested')
    await check.defer_async(order_id=order_id)


@app.task(name='check')
async def check(order_id):
    """The second step: the order is done."""
    await _write(order_id, 'ACTIVE')
''' % CONCURRENCY

_DEFER = '''"""Defer N request jobs in one batch (generated)."""
import asyncio
import sys
import time

from brbench_procrastinate_app import app, request


async def main(count):
    async with app.open_async():
        # The moment the first job goes in: the start of the timing.
        print(time.time(), flush=True)
        await request.batch_defer_async(
            *({'order_id': index} for index in range(count)))

asyncio.run(main(int(sys.argv[1])))
'''


def _conninfo(url):
    """libpq's URL form of a SQLAlchemy URL."""
    return sa.engine.make_url(url).set(drivername='postgresql') \
        .render_as_string(hide_password=False)


def _admin(server_url):
    return sa.create_engine(server_url, isolation_level='AUTOCOMMIT',
                            poolclass=sa.pool.NullPool)


def measure(postgresql_url, workdir, count, processes, log):
    """Complete ``count`` two-job orders with ``processes`` workers.

    :param postgresql_url: a SQLAlchemy URL of the server; the peer makes
        a database of its own there and drops it at the end.
    :returns: the figures; raises RuntimeError when the run fails.
    """
    python = peers.ensure_venv(
        'procrastinate', 'procrastinate', VERSION,
        ['procrastinate==%s' % VERSION, 'psycopg[binary,pool]'],
        VENV_VARIABLE, log)
    name = 'brbench_procrastinate_%s' % uuid.uuid4().hex[:8]
    admin = _admin(postgresql_url)
    with admin.connect() as connection:
        connection.exec_driver_sql('CREATE DATABASE %s' % name)
    url = sa.engine.make_url(postgresql_url).set(database=name)
    try:
        return _measure(python, url, workdir, count, processes, log)
    finally:
        with admin.connect() as connection:
            connection.exec_driver_sql(
                'DROP DATABASE IF EXISTS %s WITH (FORCE)' % name)
        admin.dispose()


def _measure(python, url, workdir, count, processes, log):
    engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
    with engine.begin() as connection:
        connection.exec_driver_sql(
            'CREATE TABLE brbench_orders (id integer PRIMARY KEY, '
            'status text NOT NULL, runs integer NOT NULL DEFAULT 0)')
        connection.exec_driver_sql(
            "INSERT INTO brbench_orders (id, status) "
            "SELECT i, 'PENDING' FROM generate_series(0, %d) AS i"
            % (count - 1))
    (workdir / 'brbench_procrastinate_app.py').write_text(_APP)
    (workdir / 'brbench_procrastinate_defer.py').write_text(_DEFER)
    environ = dict(os.environ, PYTHONPATH=str(workdir),
                   BRBENCH_CONNINFO=_conninfo(url))
    cli = [str(python.parent / 'procrastinate'),
           '--app=brbench_procrastinate_app.app']
    subprocess.run(cli + ['schema', '--apply'], cwd=str(workdir),
                   env=environ, check=True, capture_output=True)
    logs = [open(workdir / ('procrastinate-worker-%d.log' % index), 'w')
            for index in range(processes)]
    workers = [subprocess.Popen(
        cli + ['worker', '--concurrency', str(CONCURRENCY)],
        cwd=str(workdir), env=environ, stdout=log_file,
        stderr=subprocess.STDOUT, start_new_session=True)
        for log_file in logs]
    try:
        _wait_until_listening(engine, processes, workers)
        log('procrastinate: %d orders, %d worker process(es)', count,
            processes)
        deferred = subprocess.run(
            [str(python), 'brbench_procrastinate_defer.py', str(count)],
            cwd=str(workdir), env=environ, check=True, capture_output=True,
            text=True)
        started = float(deferred.stdout.split()[0])
        done, seconds = _wait_until_done(engine, count, started,
                                         timeout=60 + count / 20.0)
        time.sleep(1.0)  # room for a late duplicate to show up
        with engine.connect() as connection:
            runs = connection.exec_driver_sql(
                'SELECT coalesce(sum(runs), 0) FROM brbench_orders'
            ).scalar()
    finally:
        for worker in workers:
            peers.stop(worker)
        for log_file in logs:
            log_file.close()
        engine.dispose()
    return {
        'orders': count, 'processes': processes, 'concurrency': CONCURRENCY,
        'done': done, 'lost': count - done,
        'duplicated': runs - 2 * done if done == count else None,
        'seconds': seconds, 'rate': done / seconds if seconds else 0.0,
        'version': VERSION,
    }


def _wait_until_listening(engine, processes, workers, timeout=60):
    """Until every worker registered itself (procrastinate_workers)."""
    deadline = time.monotonic() + timeout
    while True:
        with engine.connect() as connection:
            registered = connection.exec_driver_sql(
                'SELECT count(*) FROM procrastinate_workers').scalar()
        if registered >= processes:
            return
        if any(worker.poll() is not None for worker in workers) or \
                time.monotonic() > deadline:
            raise RuntimeError('Procrastinate workers did not start; see '
                               'procrastinate-worker-*.log')
        time.sleep(0.2)


def _wait_until_done(engine, count, started, timeout):
    """``(orders ACTIVE, seconds from started to the last)``.

    :param started: epoch seconds (the deferring process's clock).
    """
    deadline = started + timeout
    while True:
        with engine.connect() as connection:
            done = connection.exec_driver_sql(
                "SELECT count(*) FROM brbench_orders "
                "WHERE status = 'ACTIVE'").scalar()
        now = time.time()
        if done >= count or now > deadline:
            return done, now - started
        time.sleep(0.05)


def main():
    """Run the peer alone: ``python -m tests.benchmarks.procrastinate_side``.
    """
    import pathlib
    import tempfile
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--count', type=int, default=400)
    parser.add_argument('--processes', type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        print(measure(os.environ['BARBICAN_RETRY_TEST_POSTGRESQL_URL'],
                      pathlib.Path(workdir), args.count, args.processes,
                      lambda text, *values: print(text % values)))


if __name__ == '__main__':
    sys.exit(main())
