"""The real Keystone of the suite and the personas the tests act as
(``tests.functional.keystone``): what the API's tests rely on."""

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session
import pytest


def _roles(body):
    return {role['name'] for role in body['roles']}


@pytest.mark.parametrize('name, role, implied', [
    ('a_reader', 'reader', set()),
    ('a_member', 'member', {'reader'}),
    ('b_reader', 'reader', set()),
    ('b_member', 'member', {'reader'}),
    ('admin', 'admin', {'manager', 'member', 'reader'}),
    ('service', 'service', set()),
])
def test_a_persona_token_is_scoped_to_its_project_with_its_roles(
        keystone, personas, name, role, implied):
    persona = getattr(personas, name)
    body = keystone.validate(keystone.token(persona))
    assert body['project']['id'] == persona.project_id
    assert body['user']['id'] == persona.user_id
    # Keystone expands the bootstrap's implied roles (admin > manager >
    # member > reader); a persona has no role beyond them.
    assert _roles(body) == {role} | implied


def test_projects_a_and_b_are_distinct_and_hold_their_users(personas):
    assert personas.project_a != personas.project_b
    assert {personas.a_reader.project_id, personas.a_member.project_id} == \
        {personas.project_a}
    assert {personas.b_reader.project_id, personas.b_member.project_id} == \
        {personas.project_b}


def test_a_member_of_a_cannot_scope_a_token_to_b(keystone, personas):
    session = ks_session.Session(auth=v3.Password(
        auth_url=keystone.url, user_id=personas.a_member.user_id,
        password=personas.a_member.password,
        project_id=personas.project_b))
    with pytest.raises(ks_exceptions.Unauthorized):
        session.get_token()


def test_a_revoked_token_is_refused_and_others_are_not(keystone, personas):
    revoked = keystone.token(personas.a_member)
    other = keystone.token(personas.a_member)
    assert keystone.validate(revoked) is not None
    keystone.revoke(revoked)
    assert keystone.validate(revoked) is None
    assert keystone.validate(other) is not None


def test_an_expired_token_is_refused(keystone, personas):
    token = keystone.expired_token(personas.a_member)
    assert keystone.validate(token) is None
    # Not the persona's fault: a new token of the same user is valid.
    assert keystone.validate(keystone.token(personas.a_member)) is not None


def test_the_authtoken_options_authenticate_the_service_user(
        keystone, personas):
    options = keystone.authtoken_options(personas.service)
    session = ks_session.Session(auth=v3.Password(
        auth_url=options['auth_url'], user_id=options['user_id'],
        password=options['password'], project_id=options['project_id']))
    body = keystone.validate(session.get_token())
    assert 'service' in _roles(body)
    assert options['www_authenticate_uri'] + '/v3' == keystone.url
