"""Per-project quotas: ``[quota] pending_orders_per_project``, a bound on
how many orders of one project may be PENDING at once, and the admin's
override of it for one project (``QuotaAPI``, ``/v1/project-quotas``).

Counted as admission counts a type's ``max_pending``
(``worker.api.admission``): exact under concurrent creators on one
database server, because the project's counted creates hold its row of
``project_quotas`` (``repositories.quotas.hold``, an UPDATE) from the
start of their transaction, so they count and insert one after the
other. The row is inserted once, by the project's first counted create,
in a transaction of its own (``MissingRow``, ``add_row``). A project
without a bound (no override, and no default) costs one read by primary
key.

A create of a bounded type in a bounded project holds the type's lock
row first, then the project's, always in that order, so that two creates
never wait for each other in a cycle.
"""

from oslo_db import exception as db_exc

#: ``[quota] pending_orders_per_project`` and an override: no bound.
UNLIMITED = -1


class OverQuota(Exception):
    """Creating the orders would put more of the project's orders PENDING
    than its quota; nothing was written."""

    def __init__(self, project_id, bound, pending, count=1):
        super().__init__(
            'project %s may have at most %d PENDING orders (its quota) and '
            'has %d; %s refused'
            % (project_id, bound, pending,
               'the new order is' if count == 1
               else 'the %d new orders are' % count))
        self.project_id = project_id
        self.bound = bound
        self.pending = pending


class MissingRow(Exception):
    """The project's row does not exist yet (its first counted create):
    insert it with ``add_row``, then run the create's transaction again."""


def bound_of(row, default):
    """The project's bound: its override, else ``default``; None when
    neither bounds it (``UNLIMITED``)."""
    bound = default if row is None or row.pending_orders is None \
        else row.pending_orders
    return None if bound is None or bound == UNLIMITED else bound


def _check(session, quotas, project_id, bound, count):
    pending = quotas.count_pending(session, project_id)
    if pending + count > bound:
        raise OverQuota(project_id, bound, pending, count)


def precheck(database, project_id, default, count):
    """Before a create writes its callback URL rows: raise ``OverQuota``
    if the project is full already (a plain count, read-only)."""
    quotas = database.repositories.quotas
    with database.reader() as session, session.begin():
        bound = bound_of(quotas.get(session, project_id), default)
        if bound is not None:
            _check(session, quotas, project_id, bound, count)


def add_row(database, project_id, now):
    """Insert the project's row (no override) in a transaction of its
    own; one inserted by another creator meanwhile is as good."""
    try:
        with database.session() as session, session.begin():
            database.repositories.quotas.insert(session, project_id, None,
                                                now)
    except (db_exc.DBDuplicateEntry, db_exc.DBDeadlock):
        pass


def admit(session, quotas, project_id, default, count, now):
    """In the create's transaction, after the type's admission: hold the
    project's row, then raise ``OverQuota`` if ``count`` more orders would
    exceed its bound. Held until the transaction ends.

    :raises MissingRow: the project is bounded and has no row yet;
        nothing was written.
    """
    row = quotas.get(session, project_id)
    bound = bound_of(row, default)
    if bound is None:
        return
    if row is None or not quotas.hold(session, project_id, now):
        raise MissingRow(project_id)
    _check(session, quotas, project_id, bound, count)
