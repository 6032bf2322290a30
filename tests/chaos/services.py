"""The broker and database servers a chaos run uses.

When ``bin/run-tests.sh`` already started them (its variables are in the
environment) they are reused; otherwise ``tests/functional/services.sh``
starts throwaway instances for this run and stops them at the end.
"""

import os
import shlex
import subprocess

from tests.functional import processes

SERVICES_SCRIPT = os.path.join(processes.REPO_ROOT, 'tests', 'functional',
                               'services.sh')


def _read_env_file(path):
    values = {}
    with open(path) as env_file:
        for line in env_file:
            line = line.strip()
            if line.startswith('export '):
                name, _, value = line[len('export '):].partition('=')
                values[name] = shlex.split(value)[0] if value else ''
    return values


class Services:
    """Running RabbitMQ, PostgreSQL and MariaDB, with restart commands."""

    def __init__(self, workdir):
        self._started_dir = None
        if not os.environ.get('BARBICAN_RETRY_TEST_TRANSPORT_URL'):
            self._started_dir = os.path.join(workdir, 'services')
            os.makedirs(self._started_dir, exist_ok=True)
            subprocess.run([SERVICES_SCRIPT, 'start', self._started_dir],
                           check=True)
            os.environ.update(_read_env_file(
                os.path.join(self._started_dir, 'env')))
        self.transport_url = os.environ['BARBICAN_RETRY_TEST_TRANSPORT_URL']

    @staticmethod
    def _run(variable):
        subprocess.run([os.environ[variable]], check=True,
                       capture_output=True, timeout=180)

    def restart(self, service, down_seconds, sleep):
        """Stop ``service`` (rabbitmq, postgresql, mysql), wait, start it."""
        self._run('BARBICAN_RETRY_TEST_%s_STOP' % service.upper())
        sleep(down_seconds)
        self._run('BARBICAN_RETRY_TEST_%s_START' % service.upper())

    def close(self):
        """Stop the servers this run started (not ones it reused)."""
        if self._started_dir:
            subprocess.run([SERVICES_SCRIPT, 'stop', self._started_dir],
                           check=False)
