"""Which URLs an order's events go to, chosen when it is created."""

from oslo_db import api as oslo_db_api
from oslo_db import exception as db_exc

from worker.notifications import targets


def urls_for_order(conf, callback_urls=()):
    """The URLs a new order is subscribed to: its ``callback_urls`` and
    ``[notifications] endpoints``, each once.

    :raises targets.RefusedUrl: a callback URL names a host that
        ``[notifications] allowed_hosts`` does not allow.
    """
    group = conf.notifications
    urls = []
    if callback_urls:
        allowed = targets.AllowedHosts.parse(group.allowed_hosts)
        for url in callback_urls:
            url = allowed.check(url)
            if url not in urls:
                urls.append(url)
    for url in endpoints(group.endpoints):
        if url not in urls:
            urls.append(url)
    return urls


def endpoints(entries):
    """``[notifications] endpoints``, each URL canonical
    (``targets.canonical``), as a callback URL naming one is."""
    return [targets.canonical(url) for url in entries]


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
