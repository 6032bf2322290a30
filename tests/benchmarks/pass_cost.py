"""Target 3: the cost of a pass that finds nothing due, by table size.

The table grows in steps (1,000 -> 10,000 -> 100,000 -> 1,000,000 rows, all
due tomorrow); at each size the same ``RetryManager.run_once`` runs many
times and its median wall time is kept. Two figures beside it, both in the
same run and on the same table:

- ``due_query``: the product's ``retry_tasks.due`` in its own transaction,
  the part of the pass whose cost could grow with the table;
- ``raw_select``: the reference of the issue, the bare indexed SELECT of
  due rows through the DB-API cursor, no ORM, no transaction handling.

The rest of a pass (taking, renewing and releasing the lock row) is fixed
work per pass; the difference between the two figures shows its weight.

At the largest size each database's plans of the pass's reads are kept
too (``tests.benchmarks.plans``). MariaDB is measured when a server is
configured (the servers the benchmark starts include one).
"""

import datetime
import statistics
import time

from oslo_utils import timeutils

from scheduler import manager
from tests.benchmarks import dispatch
from tests.benchmarks import env
from tests.benchmarks import plans
from tests.benchmarks import seed
from tests.functional import databases
from worker.db import retry_tasks

_RAW_SELECT = {
    'sqlite': ('SELECT id FROM order_retry_tasks WHERE parked = 0 AND '
               'retry_at <= ? ORDER BY retry_at, id LIMIT 500'),
    'postgresql': ('SELECT id FROM order_retry_tasks WHERE parked = false '
                   'AND retry_at <= %s ORDER BY retry_at, id LIMIT 500'),
    'mysql': ('SELECT id FROM order_retry_tasks WHERE parked = 0 '
              'AND retry_at <= %s ORDER BY retry_at, id LIMIT 500'),
}


def _median_ms(function, repeats):
    function()  # warm caches and the connection pool first
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        samples.append((time.perf_counter() - started) * 1000.0)
    return statistics.median(samples), _percentile(samples, 0.9)


def _percentile(samples, fraction):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _measure(backend, database, api, conf, repeats):
    retry_manager = manager.RetryManager(conf, database, api)
    batch = conf.scheduler.batch_size

    def one_pass():
        result = retry_manager.run_once(timeutils.utcnow())
        assert result.idle, result

    def due_query():
        with database.session() as session, session.begin():
            assert not retry_tasks.due(session, timeutils.utcnow(), batch)

    raw = database.engine.raw_connection()
    try:
        def raw_select():
            cursor = raw.cursor()
            cursor.execute(_RAW_SELECT[backend], (timeutils.utcnow(),))
            assert not cursor.fetchall()
            cursor.close()
        raw_ms = _median_ms(raw_select, repeats)
        # Close the raw connection's read transaction (DB-API opens one).
        raw.rollback()
    finally:
        raw.close()
    return {
        'pass_ms': _median_ms(one_pass, repeats),
        'due_query_ms': _median_ms(due_query, repeats),
        'raw_select_ms': raw_ms,
    }


def run_backend(backend, transport_url, sizes, repeats, workdir, log):
    """Grow one table through ``sizes``; returns one record per size and
    the plans at the largest."""
    conf = dispatch.scheduler_conf()
    api = env.worker_api(transport_url, env.new_topic())
    records = []
    with env.database(backend, workdir) as (_, database):
        stored = 0
        for size in sizes:
            log('pass cost: %s, loading up to %d rows', backend, size)
            tomorrow = timeutils.utcnow() + datetime.timedelta(days=1)
            seed.load(database, size - stored, tomorrow + datetime.timedelta(
                seconds=stored), spacing=0.001)
            stored = size
            figures = _measure(backend, database, api, conf, repeats)
            record = {'backend': backend, 'rows': size}
            for name, (median, p90) in figures.items():
                record[name] = median
                record[name.replace('_ms', '_p90_ms')] = p90
            records.append(record)
            log('pass cost: %s %d rows: pass %.2f ms, due query %.2f ms, '
                'raw select %.3f ms', backend, size, record['pass_ms'],
                record['due_query_ms'], record['raw_select_ms'])
        explained = plans.explain(database, backend, conf.scheduler.batch_size)
        explained += plans.explain_meta(database, backend)
    return records, explained


def run(transport_url, workdir, quick, log):
    """All of target 3; returns the raw figures."""
    sizes = ((1000, 10000, 100000) if quick
             else (1000, 10000, 100000, 1000000))
    repeats = 30 if quick else 100
    backends = env.BACKENDS + (
        ('mysql',) if databases.server_url('mysql') else ())
    results = {'sizes': list(sizes), 'repeats': repeats, 'records': [],
               'plans': {}}
    for backend in backends:
        records, results['plans'][backend] = run_backend(
            backend, transport_url, sizes, repeats, workdir, log)
        results['records'].extend(records)
    return results
