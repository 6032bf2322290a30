"""The database each contract test runs on (``backend``)."""

import pytest

from worker.db import memory


@pytest.fixture
def db(request, backend):
    """An in-memory database, or a migrated one on a real backend."""
    if backend == 'memory':
        return memory.InMemoryDatabase()
    return request.getfixturevalue('database')
