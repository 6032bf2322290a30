"""Fixtures of the worker's unit tests: a configuration that allows
callback URLs (the in-memory database and the recording RPC client are
every unit test's, ``tests/unit/conftest.py``)."""

import pytest

from tests import config


@pytest.fixture
def conf():
    """The project's options, callback URLs to hooks.example.org allowed.
    """
    return config.make_conf(**{
        'notifications.allowed_hosts': ['hooks.example.org'],
        'notifications.secret': 's'})
