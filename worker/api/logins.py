"""``LoginAPI``: the operator console's logins, kept in the database.

A login is created once Keystone has issued its token
(``worker.rest.console.auth``); the browser holds a random cookie value
and the table holds only its SHA-256, the token and the identity it
carries. The database is what every process of ``barbican-retry-api``
already shares (a gunicorn worker serves a request whose login another
worker made), survives their restarts, and needs no cache server: a
deployment without memcached still has a working console.
"""

import dataclasses
import datetime
import hashlib
import secrets


@dataclasses.dataclass(frozen=True)
class Login:
    """A live console login: what the Keystone token says of its holder."""

    token: str
    csrf_token: str
    user_id: str
    user_name: str
    project_id: str
    project_name: str
    roles: tuple
    expires_at: datetime.datetime


def session_id(cookie):
    """The row id of ``cookie``'s login: its SHA-256, in hex."""
    return hashlib.sha256(cookie.encode('utf-8')).hexdigest()


class LoginAPI:
    """Create, find and end console logins.

    :param database: the ``worker.db.session.Database`` of the orders.
    :param now: a callable of the current time, naive UTC.
    """

    def __init__(self, database, now):
        self._database = database
        self._now = now

    def _queries(self):
        return self._database.queries.console_sessions

    def create(self, login):
        """Store ``login`` (a ``Login``); return the new cookie value.

        Expired logins are deleted in the same transaction, a few at a
        time, so the table holds about the live ones.
        """
        cookie = secrets.token_urlsafe(32)
        now = self._now()
        values = dict(dataclasses.asdict(login), id=session_id(cookie),
                      roles=','.join(login.roles), created_at=now)
        with self._database.session() as session, session.begin():
            self._queries().delete_expired(session, now)
            self._queries().insert(session, values)
        return cookie

    def get(self, cookie):
        """The live ``Login`` of ``cookie``, or None."""
        with self._database.reader() as session, session.begin():
            row = self._queries().get_live(session, session_id(cookie),
                                           self._now())
            if row is None:
                return None
            return Login(
                token=row.token, csrf_token=row.csrf_token,
                user_id=row.user_id, user_name=row.user_name,
                project_id=row.project_id, project_name=row.project_name,
                roles=tuple(filter(None, row.roles.split(','))),
                expires_at=row.expires_at)

    def end(self, cookie):
        """End ``cookie``'s login (a logout); False if none was live."""
        with self._database.session() as session, session.begin():
            return self._queries().delete(session, session_id(cookie))


def new_csrf_token():
    """A new synchronizer token for a login."""
    return secrets.token_hex(32)
