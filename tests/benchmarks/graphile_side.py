"""The Graphile Worker peer (issue 32, part 4).

Graphile Worker is a job queue for Node.js on PostgreSQL alone: jobs are
rows, workers are woken by LISTEN/NOTIFY (and poll for jobs that come due
later). It runs the same work as the other peers, on the same PostgreSQL
server, in a database of its own:

- ``pool``: each order is a job ``request`` whose transaction writes its
  order's row and adds the job ``check`` (``graphile_worker.add_job``, in
  the same transaction); ``check`` writes the row ACTIVE. Timed as ours
  and Procrastinate's: workers up and waiting, then the N ``request`` jobs
  added in one statement (its bulk ``add_jobs``), from that moment to the
  last order ACTIVE.
- ``drain``: N jobs ``drain`` due at one moment T (``run_at``), each one
  UPDATE of its row; timed from T to the last row written.

Each worker process is ``graphile-worker``'s ``run()`` with ``CONCURRENCY``
jobs at once (our worker processes run 16 steps at once), a pool of as
many connections and ``POLL_INTERVAL_MS`` between polls, in a Node.js
script written to the work directory. Its last write records
``clock_timestamp()``, the server's clock, which is the host's: the end
of a run is read to the microsecond, not polled.

The npm package is installed on first use (``peers.ensure_npm``) with
Debian's ``nodejs`` and ``npm`` (installed by apt-get when missing) into
``~/.cache/barbican-retry-bench/graphile`` (override with
``BARBICAN_RETRY_BENCH_GRAPHILE_DIR``); never into the repository.
"""

import os
import subprocess
import time
import uuid

import sqlalchemy as sa

from tests.benchmarks import peers

PACKAGE = 'graphile-worker'
VERSION = '0.18.0'
DIRECTORY_VARIABLE = 'BARBICAN_RETRY_BENCH_GRAPHILE_DIR'
CONCURRENCY = 16
#: How often an idle worker looks for jobs that came due (its default is
#: 2 s; the issue's figures were taken at 100 ms).
POLL_INTERVAL_MS = 100

_WORKER = '''// Graphile Worker of the barbican-retry benchmark (generated).
const { run, runMigrations } = require('graphile-worker');

const options = {
  connectionString: process.env.BRBENCH_CONNINFO,
  concurrency: %(concurrency)d,
  maxPoolSize: %(concurrency)d + 1,
  pollInterval: %(poll)d,
  noHandleSignals: false,
  logger: undefined,
};

const ORDER = 'UPDATE brbench_orders SET status = $2, runs = runs + 1, ' +
  'done_at = clock_timestamp() WHERE id = $1';

const taskList = {
  // The first step: its row and the second step in one transaction.
  request: async (payload, helpers) => {
    await helpers.withPgClient(async (client) => {
      await client.query('BEGIN');
      try {
        await client.query(ORDER, [payload.order_id, 'requested']);
        await client.query(
          "SELECT graphile_worker.add_job('check', " +
          "json_build_object('order_id', $1::int))", [payload.order_id]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw error;
      }
    });
  },
  // The second step: the order is done.
  check: async (payload, helpers) => {
    await helpers.query(ORDER, [payload.order_id, 'ACTIVE']);
  },
  // The drain's job: one UPDATE.
  drain: async (payload, helpers) => {
    await helpers.query(ORDER, [payload.order_id, 'ACTIVE']);
  },
};

async function main() {
  if (process.argv[2] === 'migrate') {
    await runMigrations(options);
    return;
  }
  const runner = await run({ ...options, taskList });
  console.log('brbench: ready');
  await runner.promise;
}

main().catch((error) => { console.error(error); process.exit(1); });
'''


def _admin(server_url):
    return sa.create_engine(server_url, isolation_level='AUTOCOMMIT',
                            poolclass=sa.pool.NullPool)


def _conninfo(url):
    """libpq's URL form of a SQLAlchemy URL."""
    return url.set(drivername='postgresql').render_as_string(
        hide_password=False)


def _database(postgresql_url):
    """A new database on the server; its name and URL."""
    name = 'brbench_graphile_%s' % uuid.uuid4().hex[:8]
    admin = _admin(postgresql_url)
    with admin.connect() as connection:
        connection.exec_driver_sql('CREATE DATABASE %s' % name)
    admin.dispose()
    return name, sa.engine.make_url(postgresql_url).set(database=name)


def _drop(postgresql_url, name):
    admin = _admin(postgresql_url)
    with admin.connect() as connection:
        connection.exec_driver_sql(
            'DROP DATABASE IF EXISTS %s WITH (FORCE)' % name)
    admin.dispose()


class _Peer:
    """A database of the peer's, its schema migrated, and its workers."""

    def __init__(self, postgresql_url, workdir, count, log):
        self._server = postgresql_url
        self._workdir = workdir
        self._log = log
        self.count = count
        self._directory = peers.ensure_npm(
            'graphile', PACKAGE, VERSION, DIRECTORY_VARIABLE, log)
        self._name, url = _database(postgresql_url)
        self.engine = sa.create_engine(url, poolclass=sa.pool.NullPool)
        self._script = workdir / 'brbench_graphile_worker.js'
        self._script.write_text(_WORKER % {'concurrency': CONCURRENCY,
                                           'poll': POLL_INTERVAL_MS})
        self._environ = dict(
            os.environ, BRBENCH_CONNINFO=_conninfo(url),
            NODE_PATH=str(self._directory / 'node_modules'))
        self._workers, self._logs = [], []

    def __enter__(self):
        with self.engine.begin() as connection:
            connection.exec_driver_sql(
                'CREATE TABLE brbench_orders (id integer PRIMARY KEY, '
                'status text NOT NULL, runs integer NOT NULL DEFAULT 0, '
                'done_at timestamptz)')
            connection.exec_driver_sql(
                "INSERT INTO brbench_orders (id, status) SELECT i, "
                "'PENDING' FROM generate_series(0, %d) AS i"
                % (self.count - 1))
        subprocess.run(['node', str(self._script), 'migrate'],
                       env=self._environ, check=True, capture_output=True,
                       timeout=120)
        return self

    def __exit__(self, *exc_info):
        for worker in self._workers:
            peers.stop(worker)
        for log_file in self._logs:
            log_file.close()
        self.engine.dispose()
        _drop(self._server, self._name)

    def start(self, processes, timeout=60):
        """Start ``processes`` workers; return once each is ready."""
        for index in range(processes):
            path = self._workdir / ('graphile-worker-%d.log' % index)
            self._logs.append(open(path, 'w'))
            self._workers.append(subprocess.Popen(
                ['node', str(self._script)], env=self._environ,
                stdout=self._logs[-1], stderr=subprocess.STDOUT,
                start_new_session=True))
        deadline = time.monotonic() + timeout
        for index, worker in enumerate(self._workers):
            path = self._workdir / ('graphile-worker-%d.log' % index)
            while 'brbench: ready' not in path.read_text():
                if worker.poll() is not None or \
                        time.monotonic() > deadline:
                    raise RuntimeError('Graphile Worker did not start; see '
                                       '%s' % path)
                time.sleep(0.1)

    def add_jobs(self, task, run_at=None):
        """Add a job ``task`` per row, in one call of its bulk function
        (``add_jobs``); the epoch seconds just before it."""
        started = time.time()
        with self.engine.begin() as connection:
            connection.exec_driver_sql(
                "SELECT count(*) FROM graphile_worker.add_jobs(ARRAY("
                "SELECT ROW(%%(task)s, json_build_object('order_id', i), "
                "NULL, %s, NULL, NULL, NULL, NULL)::graphile_worker.job_spec "
                "FROM generate_series(0, %d) AS i))" % (
                    'to_timestamp(%(run_at)s)' if run_at else 'NULL',
                    self.count - 1),
                {'task': task, 'run_at': run_at})
        return started

    def wait_until_done(self, timeout):
        """``(rows ACTIVE, epoch of the last one's write, runs)``."""
        deadline = time.monotonic() + timeout
        query = ("SELECT count(*), extract(epoch FROM max(done_at)), "
                 "coalesce(sum(runs), 0) FROM brbench_orders "
                 "WHERE status = 'ACTIVE'")
        while True:
            with self.engine.connect() as connection:
                done, last, runs = connection.exec_driver_sql(query).one()
            if done >= self.count or time.monotonic() > deadline:
                time.sleep(1.0)  # room for a late duplicate to show up
                with self.engine.connect() as connection:
                    done, last, runs = connection.exec_driver_sql(
                        query).one()
                return done, float(last) if last else None, runs
            time.sleep(0.1)


def _figures(count, processes, done, seconds, runs, runs_per_row):
    return {'processes': processes, 'concurrency': CONCURRENCY,
            'poll_interval_ms': POLL_INTERVAL_MS, 'done': done,
            'lost': count - done,
            'duplicated': runs - runs_per_row * done if done == count
            else None, 'seconds': seconds,
            'rate': done / seconds if seconds else 0.0, 'version': VERSION}


def measure(postgresql_url, workdir, count, processes, log):
    """Complete ``count`` two-job orders with ``processes`` workers.

    :returns: the figures; raises on a failed run.
    """
    with _Peer(postgresql_url, workdir, count, log) as peer:
        peer.start(processes)
        log('graphile: %d orders, %d worker process(es)', count, processes)
        started = peer.add_jobs('request')
        done, last, runs = peer.wait_until_done(60 + count / 20.0)
    seconds = last - started if last else float('nan')
    return {'orders': count, **_figures(count, processes, done, seconds,
                                        runs, 2)}


def drain(postgresql_url, workdir, count, processes, log):
    """``count`` jobs due at one moment T, each one UPDATE; the drain's
    figures from T to the last."""
    with _Peer(postgresql_url, workdir, count, log) as peer:
        peer.start(processes)
        lead = 3 + count / 2000.0
        due = time.time() + lead
        log('graphile: %d jobs due in %.0fs, %d worker process(es)', count,
            lead, processes)
        peer.add_jobs('drain', run_at=due)
        if time.time() > due:
            raise RuntimeError('the jobs took longer to add than the lead')
        done, last, runs = peer.wait_until_done(lead + 60 + count / 20.0)
    seconds = last - due if last else float('nan')
    return {'rows': count, **_figures(count, processes, done, seconds,
                                      runs, 1)}


def figures_or_error(what, workdir, count, processes, log):
    """``measure`` or ``drain`` on the PostgreSQL server the product's
    measurements use; ``{'error': ...}`` when the peer fails (its failure
    is a row of the table, not the end of the run)."""
    from tests.functional import databases
    try:
        return (drain if what == 'drain' else measure)(
            databases.server_url('postgresql'), workdir, count,
            processes, log)
    except Exception as exc:
        log('graphile (%s, %d processes) failed: %s', what, processes, exc)
        return {'error': '%s: %s' % (type(exc).__name__, exc)}
