"""Which URLs an order's events go to, chosen when it is created."""

from oslo_db import exception as db_exc

from worker.notifications import targets


def urls_for_order(conf, callback_url=None):
    """The URLs a new order is subscribed to: its ``callback_url`` and
    ``[notifications] endpoints``, each once.

    :raises targets.RefusedUrl: ``callback_url`` names a host that
        ``[notifications] allowed_hosts`` does not allow.
    """
    group = conf.notifications
    urls = []
    if callback_url is not None:
        urls.append(targets.AllowedHosts.parse(group.allowed_hosts).check(
            callback_url))
    for url in group.endpoints:
        if url not in urls:
            urls.append(url)
    return urls


def url_ids(database, urls, now):
    """The ids of ``urls`` in ``notification_urls``, added if new.

    In a transaction of its own: a URL added stays even if the orders'
    transaction fails, which costs nothing but a row.
    """
    store = database.repositories.notifications
    found = []
    for url in urls:
        for _ in range(2):
            try:
                with database.session() as session, session.begin():
                    row = store.find_url(session, url) or store.add_url(
                        session, url, now)
                    found.append(row.id)
                break
            except db_exc.DBDuplicateEntry:
                # Another process added it between our read and insert:
                # the second read finds it.
                continue
        else:
            raise RuntimeError('could not add notification URL %s' % url)
    return found
