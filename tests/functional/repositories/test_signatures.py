"""The fake has every function of the SQL repositories, with its
signature.
"""

import inspect

import pytest

from worker.db import memory
from worker.db import repositories


def _public_functions(module):
    return {name: function for name, function in vars(module).items()
            if inspect.isfunction(function) and not name.startswith('_') and
            function.__module__ == module.__name__}


@pytest.mark.parametrize('aggregate', ('locks', 'orders', 'steps',
                                       'retry_tasks', 'services',
                                       'notifications'))
def test_fake_has_every_sql_function_with_its_signature(aggregate):
    sql = _public_functions(getattr(repositories.SQL, aggregate))
    fake = getattr(memory.InMemoryDatabase().repositories, aggregate)
    public = {name for name in dir(fake) if not name.startswith('_')}

    assert public == set(sql)
    for name, function in sql.items():
        assert (inspect.signature(getattr(fake, name)) ==
                inspect.signature(function)), name
