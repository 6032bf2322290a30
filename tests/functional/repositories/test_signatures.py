"""The fake has every function of the SQL repositories but the API's and
operator commands' queries (``worker.db.queries``), with its signature:
the same parameters, defaults and annotations, but for the session's type
(a SQLAlchemy session or an in-memory one).
"""

import inspect
import typing

import pytest

from worker.db import memory
from worker.db import queries
from worker.db import repositories


def _public_functions(module):
    """The module's repository functions: public, and taking the session
    first (a statement built for a dialect, ``orders.list_statement``,
    is not one)."""
    return {name: function for name, function in vars(module).items()
            if inspect.isfunction(function) and not name.startswith('_') and
            function.__module__ == module.__name__ and
            next(iter(inspect.signature(function).parameters), None) ==
            'session'}


def _queries(aggregate):
    """The names of the aggregate's queries that the fake does not have.
    """
    protocol = typing.get_type_hints(queries.Queries).get(aggregate)
    return {name for name in vars(protocol) if not name.startswith('_')
            } if protocol is not None else set()


def _but_the_session(function):
    """The signature of ``function``, its session's annotation left out.
    """
    signature = inspect.signature(function)
    session, *others = signature.parameters.values()
    return signature.replace(parameters=[
        session.replace(annotation=inspect.Parameter.empty), *others])


@pytest.mark.parametrize('aggregate', ('locks', 'orders', 'steps',
                                       'retry_tasks', 'services',
                                       'notifications', 'resources'))
def test_fake_has_every_sql_function_with_its_signature(aggregate):
    sql = _public_functions(getattr(repositories.SQL, aggregate))
    narrower = _queries(aggregate)
    assert narrower <= set(sql)
    sql = {name: function for name, function in sql.items()
           if name not in narrower}
    fake = getattr(memory.InMemoryDatabase().repositories, aggregate)
    public = {name for name in dir(fake) if not name.startswith('_')}

    assert public == set(sql)
    for name, function in sql.items():
        assert (_but_the_session(getattr(fake, name)) ==
                _but_the_session(function)), name
