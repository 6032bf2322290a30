"""Fixtures of every unit test: the in-memory database and a recording
RPC client."""

import pytest

from tests import fakes
from worker.db import memory


@pytest.fixture
def database():
    """An empty in-memory database."""
    return memory.InMemoryDatabase()


@pytest.fixture
def client():
    """An RPC client that records what it casts."""
    return fakes.RecordingRPCClient()
