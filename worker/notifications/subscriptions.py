"""Which URLs an order's events go to, chosen when it is created.

A URL with a secret of its own may belong to a project
(``notification_urls.project_id``): only that project's orders may name
it, so that its key signs only that project's events. The operator's
``[notifications] endpoints`` receive every project's events whatever
their owner: an owner matters to one only once it is no longer listed.
"""

import functools

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc

from worker.common import targets


class ForeignUrl(targets.RefusedUrl):
    """A callback URL that another project owns."""


def urls_for_order(conf, callback_urls=(), database=None, project_id=None):
    """The URLs a new order is subscribed to: its ``callback_urls``,
    canonical, and ``[notifications] endpoints``, each once.

    :param database: where the URLs' owners are read; None: not checked.
    :param project_id: the order's project.
    :raises targets.RefusedUrl: a callback URL names a host that
        ``[notifications] allowed_hosts`` does not allow, or (``ForeignUrl``)
        another project owns it.
    """
    group = conf.notifications
    urls = []
    if callback_urls:
        allowed = targets.AllowedHosts.parse(group.allowed_hosts)
        for url in callback_urls:
            url = allowed.check(url)
            if url not in urls:
                urls.append(url)
        if database is not None:
            check_owners(database, [url for url in urls if not is_endpoint(
                group.endpoints, url)], project_id)
    for url in endpoints(group.endpoints):
        if url not in urls:
            urls.append(url)
    return urls


def check_owners(database, urls, project_id):
    """Refuse the URLs of ``urls`` that a project other than
    ``project_id`` owns.

    A URL with a secret of its own signs what its receiver trusts: an
    order of another project naming it would have its events signed with
    that key. The caller leaves out the operator's ``endpoints``
    (``is_endpoint``): they get every order's events anyway.

    :raises ForeignUrl: naming the URL.
    """
    store = database.repositories.notifications
    with database.reader() as session:
        for url in urls:
            row = store.find_url(session, url)
            if not owned_by(row, project_id):
                raise ForeignUrl(
                    'callback URL %r belongs to another project (it has a '
                    'secret of its own); ask the operator' % url)


def owned_by(row, project_id):
    """True if orders of ``project_id`` may name the URL of ``row`` (its
    ``notification_urls`` row, or None for a URL not known yet)."""
    return (row is None or row.project_id is None or
            row.project_id == project_id)


def endpoints(entries):
    """``[notifications] endpoints``, each URL canonical
    (``targets.canonical``), as a callback URL naming one is."""
    return [targets.canonical(url) for url in entries]


def is_endpoint(entries, url):
    """True if ``url`` is one of ``entries`` (``[notifications]
    endpoints``), both compared canonical: a row written before URLs were
    kept canonical holds the text as it was given. A URL refused now is
    none."""
    try:
        return targets.canonical(url) in _endpoint_set(tuple(entries))
    except targets.RefusedUrl:
        return False


@functools.lru_cache(maxsize=4)
def _endpoint_set(entries):
    """``endpoints`` once per value of the option, not at each request
    (it is read each time: it may change on SIGHUP)."""
    return frozenset(endpoints(entries))


def url_ids(database, urls, now):
    """The ids of ``urls`` in ``notification_urls``, added if new.

    Each in a transaction of its own: a URL added stays even if the
    orders' transaction fails, which costs nothing but a row.
    """
    return [_url_id(database, url, now) for url in urls]


# Another process added the URL between our read and our insert: on one
# server the insert is refused (a duplicate), on a Galera cluster, where
# both inserts ran, the second COMMIT is (a deadlock). Either way the
# read of the next try finds it.
@oslo_db_api.wrap_db_retry(
    max_retries=3, retry_on_deadlock=True, retry_interval=0.05,
    exception_checker=lambda exc: isinstance(exc, db_exc.DBDuplicateEntry))
def _url_id(database, url, now):
    store = database.repositories.notifications
    with database.session() as session, session.begin():
        row = (store.find_url(session, url) or
               store.add_url(session, url, now))
    return row.id
