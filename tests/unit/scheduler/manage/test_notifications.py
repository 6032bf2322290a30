"""``barbican-retry-manage notification …`` against the in-memory
database, with a fake app whose clock the test moves."""

import argparse
import datetime
import types

from scheduler.manage import notifications
from tests import config
from tests import singular
from tests.unit.worker.notifications import test_deliveries as deliveries
from worker.notifications import subscriptions

URL = 'https://hooks.example.org/orders'
NOW = datetime.datetime(2026, 11, 28, 12, 0, 0)


def _app(database, times):
    """An app whose ``now()`` gives ``times`` one after the other."""
    moments = iter(times)

    def no_rpc():
        raise RuntimeError('no transport here')
    return types.SimpleNamespace(database=database, conf=config.make_conf(),
                                 now=lambda: next(moments),
                                 worker_api=no_rpc)


def test_enable_writes_the_url_at_the_time_of_its_transaction(
        sqlite_database):
    database = sqlite_database
    [url_id] = subscriptions.url_ids(database, [URL], NOW)
    store = database.repositories.notifications
    with database.session() as session, session.begin():
        store.url_failed(session, url_id, NOW, 'HTTP 500', True)
    # The command's clock, then the URL's transaction's.
    command_time, change_time = (NOW + datetime.timedelta(seconds=s)
                                 for s in (1, 2))
    app = _app(database, [command_time, change_time])

    notifications.EnableUrl(app, None).take_action(
        argparse.Namespace(url=URL))

    with database.reader() as session:
        url = singular.get_url(store, session, url_id)
    assert (url.available, url.updated_at) == (True, change_time)


def test_a_url_given_back_resumes_its_deliveries_with_enable(
        monkeypatch, sqlite_database):
    """doc/notifications.md: a delivery PAUSED because another project
    took its URL resumes with ``notification url enable`` once
    ``set-owner`` gives the URL back, though the URL never became
    unavailable."""
    # The test plugin of the delivery tests, on SQLite: the command's
    # writes are SQL only (``worker.db.queries``).
    deliveries.database.__wrapped__(monkeypatch)
    database = sqlite_database
    sender = deliveries.ScriptedSender()
    worker = deliveries.Worker(database, sender)
    order_id = deliveries._order(database)
    url_id = deliveries._url(database).id
    store = database.repositories.notifications
    with database.session() as session, session.begin():
        store.set_owner(session, url_id, 'someone-else', NOW)
    worker.run(deliveries.DELIVERY, order_id, 0)
    assert deliveries._step(database, order_id, deliveries.DELIVERY
                            ).status == deliveries.models.STEP_WAITING

    for command, argv in ((notifications.SetOwner, ['--project',
                                                    deliveries.PROJECT]),
                          (notifications.EnableUrl, [])):
        app = _app(database, [NOW] * 2)
        runner = command(app, None)
        runner.take_action(runner.get_parser('x').parse_args(
            [deliveries.URL] + argv))

    step = deliveries._step(database, order_id, deliveries.DELIVERY)
    assert step.status == deliveries.models.STEP_PENDING
    worker.run(deliveries.DELIVERY, order_id, step.generation)
    assert sender.sequences() == [1]
