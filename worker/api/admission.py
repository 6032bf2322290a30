"""Admission: ``[order_type:T] max_pending``, a bound on how many orders
of a type may be PENDING at once.

A create of ``count`` orders of a bounded type is refused
(``TooManyPending``) when the type's PENDING orders plus ``count`` would
exceed the bound; nothing is written then. Exact on one database server
under concurrent creators: the creates of a bounded type hold the type's
row of ``entity_locks`` (``OrderAdmission:<type>``) from the start of
their transaction (``locks.hold``, an UPDATE), so they count and insert
one after the other. The row is inserted once, by the first create of
the type, in a transaction of its own (``MissingLock``, ``add_lock``).
A type without a bound costs nothing: no read, no lock.

``admit`` holds the lock, then counts, in the create's transaction. A
create with callback URLs writes their rows before its transaction
(``worker.notifications.subscriptions.url_ids``), so it first runs
``precheck``, a plain count that refuses what is over the bound already:
a refused create writes nothing at all. One that passes
the precheck and is refused by ``admit`` (another creator took the last
place meanwhile) may leave the row of a callback URL never used before,
a row that any later order of that URL reuses.

The count reads one range of ``ix_orders_type_status``: a create costs
the lock and a count of the type's PENDING orders, which grows with
them.
"""

import socket
import uuid

from oslo_db import exception as db_exc

#: The ``entity_locks`` row a bounded type's creates serialize on is this
#: and the type's name (at most 32 characters; the column holds 64).
LOCK_PREFIX = 'OrderAdmission:'


class TooManyPending(Exception):
    """Creating the orders would put more orders of the type PENDING than
    its ``max_pending``; nothing was written."""

    def __init__(self, order_type, bound, pending, count=1):
        super().__init__(
            'order type %s allows at most %d PENDING orders '
            '([order_type:%s] max_pending) and has %d; %s refused'
            % (order_type, bound, order_type, pending,
               'the new order is' if count == 1
               else 'the %d new orders are' % count))
        self.order_type = order_type
        self.bound = bound
        self.pending = pending


def lock_entity(order_type):
    """The ``entity_locks`` key of ``order_type``'s admission."""
    return LOCK_PREFIX + order_type


def _check(session, repositories, order_type, bound, count):
    pending = repositories.orders.count_pending(session, order_type)
    if pending + count > bound:
        raise TooManyPending(order_type, bound, pending, count)


def precheck(database, order_type, bound, count):
    """Before a create writes its callback URL rows: raise
    ``TooManyPending`` if the type is full already (a plain count, in a
    read-only transaction).

    :param bound: the type's ``max_pending``, or None (nothing is done).
    """
    if bound is None:
        return
    with database.reader() as session, session.begin():
        _check(session, database.repositories, order_type, bound, count)


class MissingLock(Exception):
    """The type's lock row does not exist yet (its first create): insert
    it with ``add_lock``, then run the create's transaction again."""


def add_lock(database, order_type, now):
    """Insert ``order_type``'s lock row in a transaction of its own; one
    inserted by another creator meanwhile is as good."""
    try:
        with database.session() as session, session.begin():
            database.repositories.locks.insert(
                session, lock_entity(order_type), socket.gethostname(),
                str(uuid.uuid4()), now)
    except (db_exc.DBDuplicateEntry, db_exc.DBDeadlock):
        # Another creator inserted it first (on Galera, its insert
        # certified first): the row exists either way.
        pass


def admit(session, repositories, order_type, bound, count, now):
    """In the create's transaction, before its first insert: hold the
    type's lock row, then raise ``TooManyPending`` if ``count`` more
    orders would exceed ``bound``. The lock is held until the transaction
    ends, so the next create of the type counts this one's orders.

    :param bound: the type's ``max_pending``, or None (nothing is done).
    :raises MissingLock: the type has no lock row yet; nothing was
        written.
    """
    if bound is None:
        return
    if not repositories.locks.hold(session, lock_entity(order_type), now):
        # Inserted apart rather than here: two first creates inserting
        # it in their own transactions would fail one of them.
        raise MissingLock(order_type)
    _check(session, repositories, order_type, bound, count)
