"""Fixtures of every unit test: the in-memory database, a SQLite one for
the paths the fake does not serve, and a recording RPC client."""

import shutil

import pytest

from tests import fakes
from worker.db import memory
from worker.db import migration
from worker.db import session as db_session


@pytest.fixture
def database():
    """An empty in-memory database."""
    return memory.InMemoryDatabase()


@pytest.fixture(scope='session')
def migrated_sqlite(tmp_path_factory):
    """A migrated SQLite file, made once, that each test copies."""
    path = tmp_path_factory.mktemp('schema') / 'migrated.sqlite'
    template = db_session.Database.from_url('sqlite:///%s' % path)
    migration.upgrade(template.engine)
    template.dispose()
    return path


@pytest.fixture
def sqlite_database(migrated_sqlite, tmp_path):
    """An empty migrated SQLite database of the test's own.

    The API's and the operator commands' queries (``worker.db.queries``)
    are SQL only, not faked: their tests run on this, through the same
    SQL repositories as the daemons.
    """
    path = tmp_path / 'unit.sqlite'
    shutil.copyfile(migrated_sqlite, path)
    database = db_session.Database.from_url('sqlite:///%s' % path)
    yield database
    database.dispose()


@pytest.fixture
def client():
    """An RPC client that records what it casts."""
    return fakes.RecordingRPCClient()
