"""The retrying of a step's claim and result transactions.

Lost races (deadlocks; on Galera, write sets refused at COMMIT) and lost
connections roll the transaction back whole, so running it again is
safe; the message was already acknowledged and would otherwise be lost.
A lost race is run again at once (the winner has committed), a lost
connection after a second or more.
"""

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc
from sqlalchemy import exc as sa_exc

from worker.db import session as db_session

_on_disconnect = oslo_db_api.wrap_db_retry(
    max_retries=5, retry_on_disconnect=True, inc_retry_interval=True)

# What a database that is down, unreachable, overloaded or losing races
# raises: the transaction would go through later as it is. oslo.db turns
# driver errors into its own (``DBConnectionError``, ``DBDeadlock``);
# SQLAlchemy's own are a pool that has no connection to give
# (``TimeoutError``) and errors no filter of oslo.db knew
# (``OperationalError``, ``InterfaceError``).
_OUTAGES = (db_exc.DBConnectionError, db_exc.DBDeadlock,
            sa_exc.DisconnectionError, sa_exc.TimeoutError,
            sa_exc.OperationalError, sa_exc.InterfaceError)


def retried(function):
    """Run ``function``'s transaction again after a lost race or a lost
    connection."""
    return _on_disconnect(db_session.retry_lost_race(function))


def is_outage(exc):
    """True if ``exc`` says the database could not take a transaction
    now, whatever it held: written again later, it may go through.

    Anything else a result's transaction raises (a ``KeyError`` deciding
    it, a value the database refuses) would be raised again by the same
    result: writing it again later cannot help.
    """
    return isinstance(exc, _OUTAGES)
