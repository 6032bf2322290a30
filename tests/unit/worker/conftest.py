"""Fixtures of the worker's unit tests: the in-memory database, a
recording RPC client and a configuration that allows callback URLs."""

import pytest

from tests import config
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


@pytest.fixture
def conf():
    """The project's options, callback URLs to hooks.example.org allowed.
    """
    return config.make_conf(**{
        'notifications.allowed_hosts': ['hooks.example.org'],
        'notifications.secret': 's'})
