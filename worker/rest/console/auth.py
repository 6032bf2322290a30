"""Who uses the console: a Keystone login kept on the server side.

The login form's user name, password and project (or an existing token
and a project) are exchanged with Keystone by keystoneauth1 for a
project-scoped token; ``worker.api.logins`` keeps the token and the
identity it carries, and the browser gets only a random cookie
(HttpOnly, SameSite=Strict, Secure under TLS) that expires with the
token. Each request's ``RequestContext`` is built from the login, so
the REST API's oslo.policy rules (``worker.rest.policies``) decide what
the console shows and allows.

Every action carries the login's synchronizer token (a random value
kept with the login, compared in constant time), so a page of another
site cannot act for the user. With ``[api] auth_strategy = noauth``
(127.0.0.1 only, behind ``LoopbackOnly``), a visitor is logged in at
once as an administrator of every project.
"""

import datetime
import hmac
import string

import flask
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session
from oslo_context import context as context_module

from worker import api
from worker.api import logins
from worker.rest import conf as api_conf
from worker.rest import errors

COOKIE = 'barbican_retry_console'
CSRF_FIELD = 'csrf_token'
#: A noauth login's lifetime.
LOCAL_LIFETIME = datetime.timedelta(hours=12)
LOCAL_ROLES = ('admin', 'member', 'reader')
#: The token of a noauth login: it has none.
NO_TOKEN = ''  # nosec B105: no credential, the absence of one
#: The domain of users and projects named in the form.
DEFAULT_DOMAIN = 'Default'
_TIMEOUT = 30


class LoginFailed(Exception):
    """Keystone refused the credentials, or could not be asked."""


def noauth():
    """True under ``[api] auth_strategy = noauth``."""
    return flask.current_app.config['CONSOLE_CONF'].api.auth_strategy == \
        api_conf.NOAUTH


def keystone_login(form):
    """The ``Login`` of the form's credentials, from Keystone.

    :raises LoginFailed: with the sentence to show.
    """
    conf = flask.current_app.config['CONSOLE_CONF']
    url = conf.api.console_auth_url
    if not url:
        raise LoginFailed('the console has no Keystone endpoint ([api] '
                          'console_auth_url)')
    domain = form.get('domain', '').strip() or DEFAULT_DOMAIN
    project = _project(form.get('project', '').strip(), domain)
    if form.get('token', '').strip():
        auth = v3.Token(url, token=form['token'].strip(), **project)
    else:
        auth = v3.Password(url, username=form.get('username', '').strip(),
                           password=form.get('password', ''),
                           user_domain_name=domain, **project)
    try:
        access = auth.get_access(ks_session.Session(timeout=_TIMEOUT))
    except ks_exceptions.Unauthorized:
        raise LoginFailed('Keystone refused these credentials') from None
    except ks_exceptions.ClientException as exc:
        raise LoginFailed('Keystone could not be asked: %s'
                          % type(exc).__name__) from None
    if not access.project_id:
        raise LoginFailed('name a project: the console needs a '
                          'project-scoped token')
    expires = access.expires.astimezone(datetime.timezone.utc)
    return logins.Login(
        token=access.auth_token, csrf_token=logins.new_csrf_token(),
        user_id=access.user_id, user_name=access.username or '',
        project_id=access.project_id, project_name=access.project_name or '',
        roles=tuple(access.role_names),
        expires_at=expires.replace(tzinfo=None))


def _project(text, domain):
    """The scope of the form's project: Keystone's ids are 32 hex
    digits, anything else is a name in ``domain``."""
    if len(text) == 32 and all(char in string.hexdigits for char in text):
        return {'project_id': text}
    return {'project_name': text, 'project_domain_name': domain}


def local_login(now):
    """The ``Login`` of a noauth visitor: an administrator."""
    return logins.Login(
        token=NO_TOKEN, csrf_token=logins.new_csrf_token(), user_id='local',
        user_name='local administrator', project_id=api.DEFAULT_PROJECT,
        project_name=api.DEFAULT_PROJECT, roles=LOCAL_ROLES,
        expires_at=now + LOCAL_LIFETIME)


def context_of(login):
    """The ``RequestContext`` the policy rules judge."""
    return context_module.RequestContext(
        user_id=login.user_id, project_id=login.project_id,
        roles=list(login.roles), user_name=login.user_name,
        project_name=login.project_name)


def set_cookie(response, cookie, login, now):
    """Give the browser ``cookie``, expiring with ``login``'s token."""
    response.set_cookie(
        COOKIE, cookie, max_age=max(0, int((login.expires_at - now)
                                           .total_seconds())),
        path='/console', httponly=True, samesite='Strict',
        secure=flask.request.is_secure)


def check_csrf(login):
    """Refuse (403) an action without the login's synchronizer token."""
    given = flask.request.form.get(CSRF_FIELD, '')
    if not hmac.compare_digest(given.encode('utf-8'),
                               login.csrf_token.encode('utf-8')):
        raise errors.APIError(403, 'retry.csrf',
                              'the action has no valid CSRF token: reload '
                              'the page and try again')
