"""The operator's view of notification URLs, for the REST API.

What ``barbican-retry-manage notification url list|set-owner|set-secret``
do, as functions over a ``worker.db.session.Database`` (the
``database`` of an ``OrderAPI``): the REST layer calls these and nothing
below them. A URL's secrets are never returned: ``has_secret`` says
whether it has one of its own; ``set_secret`` returns a secret it
generated, once.
"""

import datetime

from worker.common import inputs
from worker.common import targets
from worker.notifications import sealing
from worker.notifications import signing
from worker.notifications import subscriptions

#: What ``list_urls`` and the setters return of a URL.
URL_FIELDS = ('id', 'url', 'available', 'failures', 'last_error',
              'last_failure_at', 'disabled_at', 'has_secret',
              'previous_secret_until', 'project_id', 'created_at',
              'updated_at')

#: ``owner`` left as it is by ``set_secret``.
UNCHANGED = object()

#: The longest a replaced secret may go on signing (``keep_old_for``).
MAX_KEEP_OLD_FOR_SECONDS = 366 * 86400


class UrlNotFound(LookupError):
    """No notification URL has this id."""


class InvalidUrlChange(ValueError):
    """A secret, owner or URL that cannot be set."""


class OwnerNeeded(InvalidUrlChange):
    """A URL's first secret was set without an owner."""


class NotConfigured(RuntimeError):
    """Secrets cannot be stored: ``[notifications] secret_key_file`` is
    not set or not readable."""


def list_urls(database, now):
    """Every URL's ``URL_FIELDS`` (a dict each), by id."""
    store = database.repositories.notifications
    with database.reader() as session:
        return [_values(url, now) for url in store.list_urls(session)]


def set_owner(database, url_id, project_id, now):
    """Let only ``project_id``'s orders name the URL (None: every
    project's); returns its ``URL_FIELDS``.

    :raises UrlNotFound, InvalidUrlChange:
    """
    project_id = _project(project_id)
    store = database.repositories.notifications
    with database.session() as session, session.begin():
        _get(session, store, url_id)
        store.set_owner(session, url_id, project_id, now)
        return _values(_get(session, store, url_id), now)


def add_url(database, conf, url, now):
    """The id of ``url``, added if new, if ``[notifications]`` allows it.

    :raises InvalidUrlChange: its host is not allowed.
    """
    group = conf.notifications
    try:
        canonical = targets.canonical(url)
        if canonical not in subscriptions.endpoints(group.endpoints):
            canonical = targets.AllowedHosts.parse(
                group.allowed_hosts).check(url)
    except targets.RefusedUrl as exc:
        raise InvalidUrlChange(str(exc)) from None
    return subscriptions.url_ids(database, [canonical], now)[0]


def set_secret(database, conf, url_id, now, secret=None, keep_old_for=None,
               owner=UNCHANGED):
    """Give the URL a secret of its own: ``secret``, or one generated.

    :param keep_old_for: seconds the secret it replaces still signs, or
        None: it stops at once.
    :param owner: the project whose orders alone may name it, None for
        every project's, or ``UNCHANGED``; a URL's first secret needs one.
    :returns: ``(URL_FIELDS, generated secret or None)``.
    :raises UrlNotFound, InvalidUrlChange (``OwnerNeeded``: a first
        secret without an owner), NotConfigured:
    """
    if secret is not None:
        try:
            secret = signing.check_secret(secret)
        except signing.InvalidSecret as exc:
            raise InvalidUrlChange(str(exc)) from None
    if owner is not UNCHANGED:
        owner = _project(owner)
    until = _until(now, keep_old_for)
    generated = None if secret is not None else signing.generate_secret()
    try:
        stored = sealing.required(conf).seal(secret or generated)
    except sealing.SealingError as exc:
        raise NotConfigured(str(exc)) from None
    store = database.repositories.notifications
    with database.session() as session, session.begin():
        if _get(session, store, url_id).secret is None and \
                owner is UNCHANGED:
            raise OwnerNeeded(
                'a URL\'s first secret needs an owner: a project_id, or '
                'global')
        store.set_secret(session, url_id, stored, until, now)
        if owner is not UNCHANGED:
            store.set_owner(session, url_id, owner, now)
        return _values(_get(session, store, url_id), now), generated


def _get(session, store, url_id):
    url = store.get_urls(session, [url_id]).get(url_id)
    if url is None:
        raise UrlNotFound('no notification URL %s' % url_id)
    return url


def _until(now, keep_old_for):
    if keep_old_for is None:
        return None
    if isinstance(keep_old_for, bool) or not isinstance(
            keep_old_for, int) or \
            not 0 <= keep_old_for <= MAX_KEEP_OLD_FOR_SECONDS:
        raise InvalidUrlChange('keep_old_for_seconds must be an integer '
                               'from 0 to %d' % MAX_KEEP_OLD_FOR_SECONDS)
    return now + datetime.timedelta(seconds=keep_old_for)


def _project(project_id):
    if project_id is None:
        return None
    try:
        return inputs.check_text(project_id, 'project_id',
                                 inputs.MAX_PROJECT_ID_LENGTH)
    except inputs.Refused as exc:
        raise InvalidUrlChange(str(exc)) from None


def _values(url, now):
    until = url.previous_secret_until
    values = {field: getattr(url, field, None) for field in URL_FIELDS}
    values['has_secret'] = url.secret is not None
    # A previous secret that stopped signing is no longer worth showing.
    values['previous_secret_until'] = (
        until if until is not None and until > now else None)
    return values
