"""The real Keystone of the functional tests, through its API.

``tests/functional/services.sh`` starts a Keystone (bootstrapped: an
admin, its project, the roles reader, member, manager, admin and service)
and names it in its env file; this module makes, through Keystone's v3
API with keystoneauth1, the personas that the tests act as:

- projects A and B, each with a ``reader`` and a ``member`` user;
- an ``admin`` (the admin role on the bootstrap's admin project);
- a ``service`` user (the service role on a project of its own), for the
  API's own ``[keystone_authtoken]``.

Names carry a random suffix: the processes of one run (pytest-xdist) and
several runs on the same servers share one Keystone.

Tokens: ``token`` issues a new one; ``revoke`` revokes one
(``DELETE /v3/auth/tokens``); ``expired_token`` makes one that has
expired. Keystone's token lifetime (``[token] expiration``) is global, so
an expired token is made without shortening it: the token of an
application credential never outlives the credential, so a token issued
from a credential that expires in ``EXPIRED_TOKEN_LIFETIME`` seconds has
expired that much later (a genuine token of this Keystone, refused as
expired).
"""

import dataclasses
import datetime
import os
import time
import uuid

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session

#: The variables of services.sh's env file.
URL_VARIABLE = 'BARBICAN_RETRY_TEST_KEYSTONE_URL'
_ADMIN_VARIABLES = ('BARBICAN_RETRY_TEST_KEYSTONE_ADMIN_USERNAME',
                    'BARBICAN_RETRY_TEST_KEYSTONE_ADMIN_PASSWORD',
                    'BARBICAN_RETRY_TEST_KEYSTONE_ADMIN_PROJECT')
#: The topic Keystone sends its notifications to (``[oslo_messaging_
#: notifications] topics`` of its config), and its exchange (keystone's
#: ``control_exchange``).
NOTIFICATIONS_TOPIC = os.environ.get(
    'BARBICAN_RETRY_TEST_KEYSTONE_NOTIFICATIONS_TOPIC', 'notifications')
NOTIFICATIONS_EXCHANGE = 'keystone'
DOMAIN = 'default'
#: Seconds between the issue of ``expired_token``'s token and its expiry.
EXPIRED_TOKEN_LIFETIME = 5
_MAX_EXPIRED_TOKEN_LIFETIME = 60
# Keystone's own timeout for one request; a project delete with its
# notification takes well under it.
_TIMEOUT = 30


@dataclasses.dataclass(frozen=True)
class Persona:
    """A Keystone user with one role on one project."""

    #: What the tests call it: ``a_reader``, ``b_member``, ``admin``...
    name: str
    user_id: str
    username: str
    password: str
    project_id: str
    role: str


@dataclasses.dataclass(frozen=True)
class Personas:
    """The projects and users of a test session."""

    project_a: str
    project_b: str
    a_reader: Persona
    a_member: Persona
    b_reader: Persona
    b_member: Persona
    admin: Persona
    service: Persona
    #: Every project made (A, B, the service user's), to delete at the end.
    projects: tuple[str, ...]


class Keystone:
    """A client of the real Keystone, acting as its bootstrap admin."""

    def __init__(self, url, admin_username, admin_password, admin_project):
        #: The v3 URL, e.g. ``http://127.0.0.1:PORT/v3``.
        self.url = url.rstrip('/')
        self._admin = ks_session.Session(auth=v3.Password(
            auth_url=self.url, username=admin_username,
            password=admin_password, user_domain_id=DOMAIN,
            project_name=admin_project, project_domain_id=DOMAIN),
            timeout=_TIMEOUT)
        self._admin_project = admin_project
        self._roles = None

    @classmethod
    def from_environment(cls, environ=os.environ):
        """The Keystone the env file names, or None without one."""
        if not environ.get(URL_VARIABLE):
            return None
        return cls(environ[URL_VARIABLE],
                   *(environ[name] for name in _ADMIN_VARIABLES))

    @property
    def base_url(self):
        """Its URL without ``/v3``: ``www_authenticate_uri``'s value."""
        return self.url[:-len('/v3')] if self.url.endswith('/v3') \
            else self.url

    def _call(self, method, path, **kwargs):
        response = self._admin.request(self.url + path, method, **kwargs)
        return response.json() if response.content else None

    def role_id(self, name):
        """The id of the role ``name`` (made by the bootstrap)."""
        if self._roles is None:
            self._roles = {role['name']: role['id'] for role in
                           self._call('GET', '/roles')['roles']}
        return self._roles[name]

    def admin_project_id(self):
        """The id of the bootstrap's admin project."""
        projects = self._call('GET', '/projects',
                              params={'name': self._admin_project})
        return projects['projects'][0]['id']

    def create_project(self, name):
        """Create a project in the default domain; returns its id."""
        body = {'project': {'name': name, 'domain_id': DOMAIN}}
        return self._call('POST', '/projects', json=body)['project']['id']

    def delete_project(self, project_id):
        """Delete a project (Keystone notifies ``identity.project.
        deleted``); one already gone is no error."""
        try:
            self._call('DELETE', '/projects/%s' % project_id)
        except ks_exceptions.NotFound:
            pass

    def create_user(self, name, project_id, role):
        """Create a user with ``role`` on ``project_id``; returns the
        ``Persona`` (named ``name``)."""
        username = '%s-%s' % (name, uuid.uuid4().hex[:8])
        password = uuid.uuid4().hex
        body = {'user': {'name': username, 'password': password,
                         'domain_id': DOMAIN}}
        user_id = self._call('POST', '/users', json=body)['user']['id']
        self._call('PUT', '/projects/%s/users/%s/roles/%s' % (
            project_id, user_id, self.role_id(role)))
        return Persona(name, user_id, username, password, project_id, role)

    def delete_user(self, user_id):
        """Delete a user; one already gone is no error."""
        try:
            self._call('DELETE', '/users/%s' % user_id)
        except ks_exceptions.NotFound:
            pass

    def register_service(self, service_type, url):
        """Put a service of ``service_type`` in the catalog, with one
        public endpoint at ``url`` in a region of its own; returns
        ``(region, service_id)`` for ``unregister_service``.

        A region per call: another test process (or run) on the same
        Keystone registers the same type in a region of its own, and a
        client that names its region finds its own endpoint.
        """
        region = 'retry-test-%s' % uuid.uuid4().hex[:8]
        self._call('POST', '/regions', json={'region': {'id': region}})
        service_id = self._call('POST', '/services', json={'service': {
            'type': service_type, 'name': 'barbican-retry-%s' % region,
        }})['service']['id']
        self._call('POST', '/endpoints', json={'endpoint': {
            'service_id': service_id, 'interface': 'public', 'url': url,
            'region_id': region}})
        return region, service_id

    def unregister_service(self, region, service_id):
        """Remove what ``register_service`` made (Keystone deletes the
        service's endpoints with it)."""
        for path in ('/services/%s' % service_id, '/regions/%s' % region):
            try:
                self._call('DELETE', path)
            except ks_exceptions.NotFound:
                pass

    def session(self, persona):
        """A keystoneauth1 session authenticated as ``persona``, scoped to
        its project."""
        return ks_session.Session(auth=v3.Password(
            auth_url=self.url, user_id=persona.user_id,
            password=persona.password, project_id=persona.project_id),
            timeout=_TIMEOUT)

    def token(self, persona):
        """A new token of ``persona``, scoped to its project."""
        return self.session(persona).get_token()

    def validate(self, token):
        """What Keystone says of ``token``: its ``token`` body, or None
        if Keystone refuses it (expired, revoked, unknown)."""
        try:
            body = self._call('GET', '/auth/tokens',
                              headers={'X-Subject-Token': token})
        except ks_exceptions.NotFound:
            return None
        return body['token']

    def revoke(self, token):
        """Revoke ``token``: Keystone refuses it from now on."""
        self._call('DELETE', '/auth/tokens',
                   headers={'X-Subject-Token': token})

    def expired_token(self, persona, lifetime=EXPIRED_TOKEN_LIFETIME):
        """A token of ``persona`` that has expired (after ``lifetime``
        seconds of wait): issued from an application credential that
        expires ``lifetime`` seconds after its creation.

        On a machine so busy that the credential expired before its
        token was issued (or before Keystone read its creation), tried
        again with twice the lifetime, up to a minute.
        """
        own = self.session(persona)
        # Authenticated before the clock starts.
        own.get_token()
        while True:
            try:
                return self._expired_token(own, persona, lifetime)
            except (ks_exceptions.BadRequest,
                    ks_exceptions.Unauthorized):
                if lifetime >= _MAX_EXPIRED_TOKEN_LIFETIME:
                    raise
                lifetime *= 2

    def _expired_token(self, own, persona, lifetime):
        expires = (datetime.datetime.now(datetime.timezone.utc) +
                   datetime.timedelta(seconds=lifetime))
        body = {'application_credential': {
            'name': 'expiring-%s' % uuid.uuid4().hex[:8],
            'expires_at': expires.strftime('%Y-%m-%dT%H:%M:%S.%f')}}
        credential = own.post(
            '%s/users/%s/application_credentials' % (self.url,
                                                     persona.user_id),
            json=body).json()['application_credential']
        token = ks_session.Session(auth=v3.ApplicationCredential(
            auth_url=self.url, application_credential_id=credential['id'],
            application_credential_secret=credential['secret']),
            timeout=_TIMEOUT).get_token()
        # Past the expiry by a second: Keystone's times have whole
        # seconds in places.
        remaining = (expires - datetime.datetime.now(
            datetime.timezone.utc)).total_seconds()
        time.sleep(max(0.0, remaining) + 1)
        return token

    def authtoken_options(self, service):
        """The ``[keystone_authtoken]`` options of an API that validates
        tokens with this Keystone as the ``service`` persona."""
        return {
            'www_authenticate_uri': self.base_url,
            'auth_url': self.url,
            'auth_type': 'password',
            'user_id': service.user_id,
            'password': service.password,
            'project_id': service.project_id,
            # auth_token asks for the service role of the service user's
            # token, as OpenStack services are configured.
            'service_token_roles_required': 'true',
        }

    def make_personas(self):
        """Make the session's projects and users; returns ``Personas``."""
        suffix = uuid.uuid4().hex[:8]
        projects = [self.create_project('%s-%s' % (name, suffix))
                    for name in ('project-a', 'project-b', 'service')]
        project_a, project_b, service_project = projects
        return Personas(
            project_a=project_a, project_b=project_b,
            a_reader=self.create_user('a_reader', project_a, 'reader'),
            a_member=self.create_user('a_member', project_a, 'member'),
            b_reader=self.create_user('b_reader', project_b, 'reader'),
            b_member=self.create_user('b_member', project_b, 'member'),
            admin=self.create_user('admin', self.admin_project_id(),
                                   'admin'),
            service=self.create_user('service', service_project,
                                     'service'),
            projects=tuple(projects))

    def remove_personas(self, personas):
        """Delete what ``make_personas`` made."""
        for persona in (personas.a_reader, personas.a_member,
                        personas.b_reader, personas.b_member,
                        personas.admin, personas.service):
            self.delete_user(persona.user_id)
        for project_id in personas.projects:
            self.delete_project(project_id)


def authtoken_section(options):
    """``[keystone_authtoken]`` of a config file, from
    ``Keystone.authtoken_options``."""
    return '[keystone_authtoken]\n' + ''.join(
        '%s = %s\n' % item for item in options.items())
