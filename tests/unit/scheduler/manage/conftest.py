"""A real SQLite database and ``barbican-retry-manage`` run on it in a
process of its own, as an operator runs it (the command configures the
global CONF and oslo.log)."""

import dataclasses
import os
import pathlib
import subprocess
import sys

import pytest

from worker.db import migration
from worker.db import session as db_session

ROOT = pathlib.Path(__file__).resolve().parents[4]


@dataclasses.dataclass
class Operator:
    """The database and a way to run commands on it."""

    database: db_session.Database
    config: pathlib.Path
    home: pathlib.Path

    def manage(self, *argv, stdin=None):
        """Run ``barbican-retry-manage ARGV``; its CompletedProcess."""
        env = dict(os.environ, PYTHONPATH=str(ROOT), HOME=str(self.home))
        env.pop('OS_DATABASE__CONNECTION', None)
        return subprocess.run(
            [sys.executable, '-m', 'scheduler.cmd.manage',
             '--config-file', str(self.config)] + list(argv),
            cwd=self.home, env=env, input=stdin, capture_output=True,
            text=True, timeout=60)


@pytest.fixture
def operator(tmp_path):
    """A migrated SQLite database, and a configuration that names it and
    a transport that casts nowhere (``fake://``)."""
    url = 'sqlite:///%s' % (tmp_path / 'db.sqlite')
    config = tmp_path / 'manage.conf'
    config.write_text('[DEFAULT]\ntransport_url = fake://\n'
                      '[database]\nconnection = %s\n' % url)
    database = db_session.Database.from_url(url)
    migration.upgrade(database.engine)
    yield Operator(database, config, tmp_path)
    database.dispose()
