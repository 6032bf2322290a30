"""The retrying of a step's claim and result transactions.

Lost races (deadlocks; on Galera, write sets refused at COMMIT) and lost
connections roll the transaction back whole, so running it again is
safe; the message was already acknowledged and would otherwise be lost.
A lost race is run again at once (the winner has committed), a lost
connection after a second or more.
"""

from oslo_db import api as oslo_db_api

from worker.db import session as db_session

_on_disconnect = oslo_db_api.wrap_db_retry(
    max_retries=5, retry_on_disconnect=True, inc_retry_interval=True)


def retried(function):
    """Run ``function``'s transaction again after a lost race or a lost
    connection."""
    return _on_disconnect(db_session.retry_lost_race(function))
