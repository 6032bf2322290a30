"""What the repository contract tests share: the moments and steps they
use, and calls of one repository function in a transaction of its own.

The tests import these by name, unlike the rest of the tree: they read
as they did when they were one module, where a module prefix on every
call would not fit its line.
"""

import datetime

import pytest

from tests.functional import databases
from tests import singular
from worker import order_types

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)
# The certificate type: REQUEST first, then CHECK.
REQUEST = 'process_type_order'
CHECK = 'check_certificate_status'
# The fanout type's three parallel first steps, and the step after them.
ROOTS = ('check_caa', 'check_domains', 'check_key')
JOIN = 'issue'

contract = pytest.mark.parametrize('backend',
                                   ('memory',) + databases.BACKENDS)
#: The queries of the API and the operator commands
#: (``worker.db.queries``): SQL only, the fake does not have them.
sql_contract = pytest.mark.parametrize('backend', databases.BACKENDS)


def plus(seconds):
    """``NOW`` plus ``seconds``."""
    return NOW + datetime.timedelta(seconds=seconds)


def write(db, call, *args, **kwargs):
    """Run one repository call in a transaction of its own."""
    with db.session() as session, session.begin():
        return call(session, *args, **kwargs)


def read(db, call, *args, **kwargs):
    """Run one repository call in a read-only transaction."""
    with db.reader() as session, session.begin():
        return call(session, *args, **kwargs)


def new_order(db, at=NOW, meta=None, type_name='certificate'):
    """A new order of ``type_name`` created at ``at``; returns its id."""
    return write(db, db.repositories.orders.create,
                 order_types.get(type_name), meta or {}, at).id


def step_of(db, order_id, step):
    """The order's step ``step``, read in a transaction of its own."""
    return read(db, db.repositories.steps.for_order, order_id)[step]


def claimed_order(db, owner, at=NOW, lease_until=None, step=REQUEST,
                  type_name='certificate'):
    """An order whose step ``step`` ``owner`` claimed at ``at``
    (generation 1)."""
    order_id = new_order(db, at, type_name=type_name)
    assert write(db, singular.on(db.repositories.steps).claim, order_id, step,
                 0, at, owner, lease_until or plus(3600))
    return order_id
