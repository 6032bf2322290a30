"""Fixtures of the REST API's unit tests: the real app and middleware
over ``worker.api`` on a SQLite database, a Werkzeug client whose
every response is checked against doc/api-ref/openapi.yaml."""

import pytest
from werkzeug import test as werkzeug_test

from tests import config
from tests import rest_spec
from worker import api
from worker.rest import app as rest_app
from worker.rest import conf as api_conf
from worker.rest import pipeline
from worker import rpcapi
from worker import schedule_api

PROJECT_A = 'project-a'
PROJECT_B = 'project-b'
READER = {'X-Project-Id': PROJECT_A, 'X-Roles': 'reader',
          'X-User-Id': 'reader-a'}
MEMBER = {'X-Project-Id': PROJECT_A, 'X-Roles': 'reader,member',
          'X-User-Id': 'member-a'}
MEMBER_B = {'X-Project-Id': PROJECT_B, 'X-Roles': 'reader,member',
            'X-User-Id': 'member-b'}
ADMIN = {'X-Project-Id': 'admin-project',
         'X-Roles': 'reader,member,admin', 'X-User-Id': 'admin'}


@pytest.fixture
def rest_conf(conf):
    """The project's options with ``[api]`` in noauth, without audit."""
    api_conf.register_opts(conf)
    conf.set_override('auth_strategy', api_conf.NOAUTH, group='api')
    conf.set_override('audit', False, group='api')
    return conf


@pytest.fixture
def database(sqlite_database):
    """The API's lists and changes run through its queries, which only
    SQL serves (``worker.db.queries``)."""
    return sqlite_database


@pytest.fixture
def orders(database, client, rest_conf):
    """A real ``OrderAPI`` on the SQLite database."""
    return api.OrderAPI(database, rest_conf, rpcapi.WorkerAPI(client))


@pytest.fixture
def application(rest_conf, orders):
    """Returns ``make()``: the WSGI application behind its middleware."""
    def make():
        schedules = schedule_api.ScheduleAPI(orders.database, rest_conf,
                                             orders=orders)
        return pipeline.build(rest_conf, rest_app.create_app(
            rest_conf, orders, schedules))
    return make


class Client:
    """A Werkzeug client of the application; every response is checked
    against the OpenAPI description."""

    def __init__(self, wsgi):
        self._client = werkzeug_test.Client(wsgi)

    def open(self, method, path, headers=None, **kwargs):
        """The checked response of one request."""
        response = self._client.open(path, method=method,
                                     headers=headers or {}, **kwargs)
        return rest_spec.check_werkzeug(response)

    def get(self, path, headers=None, **kwargs):
        """GET ``path``."""
        return self.open('GET', path, headers, **kwargs)

    def post(self, path, headers=None, **kwargs):
        """POST ``path``."""
        return self.open('POST', path, headers, **kwargs)


@pytest.fixture
def http(application):
    """A ``Client`` of the application."""
    return Client(application())


def error_code(response):
    """The stable code of an error response."""
    [error] = response.get_json()['errors']
    assert error['status'] == response.status_code
    return error['code']


def config_for(**overrides):
    """A configuration with ``[api]`` registered (``group.name`` keys)."""
    built = config.make_conf()
    api_conf.register_opts(built)
    for key, value in overrides.items():
        group, _, name = key.rpartition('.')
        built.set_override(name, value, group or None)
    return built
