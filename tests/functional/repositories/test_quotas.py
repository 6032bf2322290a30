"""Per-project quotas' rows, on every backend (the create's side) and on
the databases (the admin's overrides)."""

from oslo_db import exception as db_exc
import pytest

from tests.functional.repositories.shared import contract
from tests.functional.repositories.shared import plus
from tests.functional.repositories.shared import read
from tests.functional.repositories.shared import sql_contract
from tests.functional.repositories.shared import write
from worker.db import orders as order_rows
from worker import order_types


def _order_of(db, project_id):
    return write(db, db.repositories.orders.create,
                 order_types.get('certificate'), {}, plus(0),
                 origin=order_rows.Origin(project_id=project_id)).id


@contract
def test_a_create_counts_and_holds_its_project_s_row(db):
    quotas = db.repositories.quotas
    assert read(db, quotas.get, 'p') is None
    assert not write(db, quotas.hold, 'p', plus(1))

    write(db, quotas.insert, 'p', None, plus(1))
    with pytest.raises(db_exc.DBDuplicateEntry):
        write(db, quotas.insert, 'p', 5, plus(2))
    row = read(db, quotas.get, 'p')
    assert (row.project_id, row.pending_orders, row.held_at) == (
        'p', None, plus(1))
    assert write(db, quotas.hold, 'p', plus(3))
    assert read(db, quotas.get, 'p').held_at == plus(3)

    _order_of(db, 'p')
    _order_of(db, 'p')
    _order_of(db, 'other')
    assert read(db, quotas.count_pending, 'p') == 2
    # Exact: another spelling of the project is another project.
    assert read(db, quotas.count_pending, 'P') == 0


@sql_contract
def test_the_admin_s_overrides(db):
    quotas, queries = db.repositories.quotas, db.queries.quotas
    assert not write(db, queries.set_override, 'a', 3, plus(1))
    write(db, quotas.insert, 'b', 4, plus(1))
    write(db, quotas.insert, 'a', None, plus(1))
    assert write(db, queries.set_override, 'a', 3, plus(2))
    assert [(row.project_id, row.pending_orders)
            for row in read(db, queries.overrides)] == [('a', 3), ('b', 4)]
    assert write(db, queries.set_override, 'b', None, plus(3))
    assert [row.project_id for row in read(db, queries.overrides)] == ['a']
    assert read(db, quotas.get, 'b').updated_at == plus(3)
