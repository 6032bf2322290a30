"""``python -m tests.benchmarks``: the figures of issues 4 to 32.

    python -m tests.benchmarks --quick              # a few minutes
    python -m tests.benchmarks --output DIR         # the full run
    python -m tests.benchmarks --only pass_cost,memory --quick

It installs its own requirements (tests/benchmarks/requirements.txt) into
the running interpreter's environment when they are missing, and starts
RabbitMQ, PostgreSQL and MariaDB of its own (``tests/functional/
services.sh``, stopped at the end) unless running ones are given through
their env file (``. SERVICES_DIR/env``); the ``cluster`` measurement
starts a Galera and a RabbitMQ cluster (``tests/functional/cluster.sh``)
the same way.

Prints one table (figure, reference measured in the same run, ratio,
target, met?) and writes ``results.json`` and PNG plots to ``--output``.
Exit status: 0 when every measurement ran (met or not), 1 when one
failed, 2 when a service is missing.
"""

import argparse
import importlib
import logging
import os
import pathlib
import platform
import subprocess
import sys
import time
import traceback

# In the order they run: the in-process measurements first, while the
# machine is quietest; the ones that start daemons after. Each is the
# module of that name here, with a ``run`` function; they are imported
# once the requirements are in.
MEASUREMENTS = ('dispatch', 'pass_cost', 'create', 'rest_api', 'drain',
                'lateness', 'memory', 'worker_pool', 'latency', 'burst',
                'purge', 'cluster', 'signal_latency', 'bulk_cancel')

_REQUIREMENTS = pathlib.Path(__file__).with_name('requirements.txt')
# The importable names of what requirements.txt lists (py-spy is a
# program, looked for only by --profile).
_REQUIRED_MODULES = ('matplotlib', 'psutil', 'kombu')


def _parse_args(argv):
    parser = argparse.ArgumentParser(
        prog='python -m tests.benchmarks',
        description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true',
                        help='Small sizes; finishes in under 3 minutes.')
    parser.add_argument('--output', default='benchmark-results',
                        help='Directory for results.json and the PNG '
                             'plots (default ./benchmark-results).')
    parser.add_argument('--only', default=','.join(MEASUREMENTS),
                        help='Comma-separated subset of: %s.'
                             % ', '.join(MEASUREMENTS))
    parser.add_argument('--profile', action='store_true',
                        help='Also profile one pass casting 10,000 rows '
                             'with py-spy (profile_dispatch_{wall,gil}.txt).')
    args = parser.parse_args(argv)
    args.only = [name.strip() for name in args.only.split(',') if name]
    unknown = set(args.only) - set(MEASUREMENTS)
    if unknown:
        parser.error('unknown measurement(s): %s' % ', '.join(sorted(unknown)))
    return args


def _logger():
    started = time.monotonic()

    def log(message, *args):
        sys.stderr.write('[%6.1fs] %s\n' % (time.monotonic() - started,
                                            message % args))
        sys.stderr.flush()
    return log


def _quiet_libraries():
    # The shared broker may hold the control exchange declared with the
    # other durability; oslo.messaging then warns on every connection and
    # falls back, which is expected here and would bury the progress lines.
    # oslo.db warns of MariaDB's SQL mode at every engine it makes.
    for name in ('oslo_messaging', 'oslo.messaging', 'amqp', 'kombu',
                 'oslo_db.sqlalchemy.engines'):
        logging.getLogger(name).setLevel(logging.ERROR)


def _install_requirements():
    """Install requirements.txt here unless its modules import already."""
    try:
        for name in _REQUIRED_MODULES:
            importlib.import_module(name)
    except ImportError as exc:
        sys.stderr.write('tests.benchmarks: %s; installing %s\n'
                         % (exc, _REQUIREMENTS))
        subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', '-r',
                        str(_REQUIREMENTS)], check=True)
        importlib.invalidate_caches()


def main(argv=None):
    """Run the selected measurements; print the table; write the files."""
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    _install_requirements()
    from tests.benchmarks import env
    from tests.chaos import services as chaos_services
    try:
        with env.scratch_dir() as workdir:
            try:
                services = chaos_services.Services(
                    str(workdir),
                    (env.TRANSPORT_VARIABLE, env.POSTGRESQL_VARIABLE))
            except subprocess.CalledProcessError as exc:
                sys.stderr.write('tests.benchmarks: could not start the '
                                 'servers (%s)\n' % exc)
                return 2
            try:
                return _run(args, env, workdir)
            finally:
                services.close()
    except KeyboardInterrupt:
        # The servers are stopped by now (Services.close); no traceback.
        sys.stderr.write('tests.benchmarks: interrupted\n')
        return 130


def _run(args, env, workdir):
    from tests.benchmarks import plots
    from tests.benchmarks import profile
    from tests.benchmarks import report
    from tests.benchmarks import statements
    try:
        transport_url, _ = env.require_services()
    except env.MissingService as exc:
        sys.stderr.write('tests.benchmarks: %s\n' % exc)
        return 2
    _quiet_libraries()
    statements.enable(workdir)
    log = _logger()
    os.makedirs(args.output, exist_ok=True)
    results = {'meta': {
        'mode': 'quick' if args.quick else 'full',
        'started': time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime()),
        'python': platform.python_version(), 'cpus': os.cpu_count(),
        'load_average_at_start': os.getloadavg(),
        'queues_durable': env.product_queues_durable(),
    }}
    failed = False
    began = time.monotonic()
    try:
        for name in args.only:
            log('== %s', name)
            section = time.monotonic()
            try:
                measurement = importlib.import_module(
                    'tests.benchmarks.' + name)
                results[name] = measurement.run(transport_url, workdir,
                                                args.quick, log)
            except Exception as exc:
                failed = True
                log('%s failed:\n%s', name, traceback.format_exc())
                results[name] = {'error': '%s: %s' % (
                    type(exc).__name__, exc)}
            results[name]['elapsed_seconds'] = time.monotonic() - section
        if args.profile:
            log('== profile of one dispatch pass')
            try:
                results['profile'] = profile.dispatch_pass(
                    transport_url, workdir, args.output, log)
            except Exception as exc:
                failed = True
                log('profile failed:\n%s', traceback.format_exc())
                results['profile'] = {'error': str(exc)}
    finally:
        env.cleanup_transports()
    results['meta']['elapsed_seconds'] = time.monotonic() - began
    results['meta']['load_average_at_end'] = os.getloadavg()
    table = report.rows(results)
    report.write_json(results, table, os.path.join(args.output,
                                                   'results.json'))
    written = plots.write_plots(results, args.output)
    report.write_plans(results, args.output)
    print(report.format_table(table))
    if 'profile' in results and 'error' not in results['profile']:
        print('\n' + profile.format_summary(results['profile']))
    print('\n%s run in %.0fs; results.json and %d plot(s) in %s' % (
        results['meta']['mode'], results['meta']['elapsed_seconds'],
        len(written), os.path.abspath(args.output)))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
