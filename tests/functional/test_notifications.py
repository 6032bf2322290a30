"""Notifications of order changes, delivered to real HTTP receivers.

Real barbican-worker and barbican-retry processes, RabbitMQ and each
database; the receivers (``tests.functional.receiver``) listen on
127.0.0.1 and check every signature. A certificate order has three
events: ``order.created``, ``order.active``, ``order.end``.
"""

import base64
import datetime
import json
import os
import signal
import time

import pytest
import standardwebhooks

from tests.functional import databases
from tests.functional import processes
from tests.functional import receiver as receivers
from tests.functional import workflows
from worker.db import migration
from worker.db import models
from worker.db import session as db_session
from worker.db import steps
from worker.notifications import events
from worker.notifications import sealing

SECRET = 'a-test-secret'
#: Events of one certificate order.
EVENTS = [1, 2, 3]
#: How long the first receiver is down.
DOWN_SECONDS = float(os.environ.get(
    'BARBICAN_RETRY_TEST_RECEIVER_DOWN_SECONDS', 60))
RETRY_MAX_SECONDS = 3


def _options(workers=1, groups=None, **notifications):
    values = {'allowed_hosts': '127.0.0.1', 'secret': SECRET,
              'timeout_seconds': 1, 'retry_base_seconds': 0.5,
              'retry_max_seconds': RETRY_MAX_SECONDS,
              'max_consecutive_failures': 1000}
    values.update(notifications)
    return workflows.options(dict({'worker': {'workers': workers},
                                   'notifications': values}, **(groups or {})))


def _create(cluster, count, callback_url=None, order_type='certificate'):
    args = ['order', 'create', '--type', order_type, '--count',
            str(count)]
    if callback_url:
        args += ['--callback-url', callback_url]
    return [order['id'] for order in cluster.manage_json(*args)]


def _received_all(receiver, created):
    seen = receiver.first_seen()
    return all(len(seen.get(order_id, ())) == len(EVENTS)
               for order_id in created)


def _assert_in_order(receiver, created):
    """Every event of every order, first seen in sequence, no gap, each
    signed."""
    seen = receiver.first_seen()
    assert {order_id: seen.get(order_id) for order_id in created} == {
        order_id: EVENTS for order_id in created}
    assert receiver.bad_signatures == 0


def _deliveries(database, created):
    """``{order_id: sorted [(status, delivered sequence)]}`` of the
    deliveries of these orders."""
    with database.reader() as session:
        found = {order_id: steps.for_order(session, order_id)
                 for order_id in created}
    return {order_id: sorted(
        (step.status, events.delivered_sequence(step))
        for name, step in found[order_id].items() if name.startswith(
            models.DELIVERY_PREFIX)) for order_id in created}


def _assert_delivered(cluster, database, created, urls=2):
    """Every delivery of these orders sent all 3 events, nothing waits;
    ``notification show`` says so of the first order."""
    expected = {order_id: [(models.STEP_DONE, len(EVENTS))] * urls
                for order_id in created}
    # A receiver has an event as soon as it answers; its delivery
    # records it once the worker writes the run's result, a moment later
    # (or, for a run whose worker was killed after sending, once the
    # retry daemon took the step back at the end of its lease and it ran
    # again).
    try:
        processes.wait_for(
            lambda: _deliveries(database, created) == expected, 90,
            'every delivery to record all its events')
    except AssertionError:
        pass
    assert _deliveries(database, created) == expected
    shown = cluster.manage_json('notification', 'show', created[0])
    assert [(row['state'], row['delivered_sequence'],
             row['waiting_events']) for row in shown] == [
        ('DELIVERED', len(EVENTS), 0)] * urls, shown
    assert cluster.manage_json('retry', 'list') == []


@pytest.fixture
def every_backend(tmp_path, transport_url):
    """Returns ``make(options)``: one ``processes.Deployment`` per backend,
    each on a migrated database of its own, run side by side.

    The minute a receiver is down is spent once for the three databases.
    """
    made = []

    def make(options):
        clusters = {}
        for backend in databases.BACKENDS:
            if backend != 'sqlite' and not databases.server_url(backend):
                if os.environ.get('BARBICAN_RETRY_TEST_REQUIRE_SERVICES'):
                    pytest.fail('%s server is not available' % backend)
                continue
            directory = tmp_path / backend
            directory.mkdir()
            url = databases.create(backend, directory)
            database = db_session.Database.from_url(url)
            migration.upgrade(database.engine)
            cluster = processes.Deployment(directory, url, transport_url,
                                           options)
            made.append((backend, url, database, cluster))
            clusters[backend] = (cluster, database)
        return clusters

    yield make
    for backend, url, database, cluster in made:
        cluster.kill_all()
        database.dispose()
        databases.drop(backend, url)


def test_every_event_reaches_each_url_in_order_despite_outage_and_kills(
        every_backend):
    """On each database, side by side, 3 worker processes: 150 orders
    sending to 2 URLs that are up, and 50 more whose callback URL is down
    for a minute; a worker killed while events go out.

    The kill comes once half of the first URL's orders were seen there,
    so it lands while events go out; 150 orders (300 before) cost the
    suite half the CPU for the same faults."""
    first, second = (receivers.Receiver(SECRET).start(),
                     receivers.Receiver(SECRET).start())
    down = receivers.Receiver(SECRET)
    # A timeout of 5 s: the receivers that are up answer from this
    # process, which shares the machine with the suite; a slower answer
    # fails its request, and a minute of them (measured with 1 s under
    # the whole suite) leaves events to deliver past the test's waits.
    # The URL that is down refuses at once: its timeout is not waited.
    clusters = every_backend(_options(workers=3, endpoints=second.url,
                                      timeout_seconds=5))
    started = {backend: workflows.start(cluster, count=3)
               for backend, (cluster, _) in clusters.items()}
    down_since = time.monotonic()
    waiting = {backend: _create(cluster, 50, callback_url=down.url)
               for backend, (cluster, _) in clusters.items()}
    created = {backend: _create(cluster, 150, callback_url=first.url)
               for backend, (cluster, _) in clusters.items()}
    for backend, (workers, _) in started.items():
        processes.wait_for(
            lambda: sum(order_id in first.first_at
                        for order_id in created[backend]) >= 75, 60,
            'events of %s orders at the first receiver' % backend)
        os.kill(workers.children()[0], signal.SIGKILL)
    for backend, (cluster, database) in clusters.items():
        everyone = created[backend] + waiting[backend]
        workflows.wait_status(database, everyone, models.ACTIVE, 120)
        processes.wait_for(
            lambda: _received_all(first, created[backend]) and
            _received_all(second, everyone), 60,
            'every %s event at the receivers that are up' % backend)
        for receiver, orders in ((first, created[backend]),
                                 (second, everyone)):
            _assert_in_order(receiver, orders)
    # The URL that is down held up no other.
    assert down.count() == 0
    # Down for a minute at least: longer if the rest took longer.
    time.sleep(max(0.0, down_since + DOWN_SECONDS - time.monotonic()))
    down.start()
    came_back = [time.monotonic()]

    for backend, (cluster, database) in clusters.items():
        processes.wait_for(lambda: _received_all(down, waiting[backend]),
                           60, 'every %s event at the receiver that came '
                           'back' % backend)
        _assert_in_order(down, waiting[backend])
        _assert_delivered(cluster, database,
                          created[backend] + waiting[backend])
        # The killed worker was replaced and served again.
        assert started[backend][0].log().count('serving topic') >= 4
    # Delivery resumed within the next try of a delivery (at most
    # retry_max_seconds away) and a pass of the retry daemon (1 s).
    resumed = {backend: min(down.first_at[order_id]
                            for order_id in waiting[backend]) -
               came_back[0] for backend in clusters}
    assert max(resumed.values()) <= RETRY_MAX_SECONDS + 1 + 2, resumed
    for receiver in (first, second, down):
        receiver.stop()


def test_a_url_that_always_fails_becomes_unavailable_then_is_enabled(
        every_backend):
    """On each database, side by side: 20 orders send to a URL answering
    500 and to one that is healthy."""
    failing = receivers.Receiver(SECRET, fault=receivers.FAIL_500,
                                 fault_times=10 ** 6).start()
    healthy = receivers.Receiver(SECRET).start()
    # A timeout of 5 s: once enabled, each URL's 20 deliveries post at
    # once to a receiver that shares the machine with the suite; a
    # request slower than the timeout would count towards disabling it
    # again.
    clusters = every_backend(_options(endpoints=healthy.url,
                                      max_consecutive_failures=3,
                                      timeout_seconds=5))
    for cluster, _ in clusters.values():
        workflows.start(cluster)
    created = {backend: _create(cluster, 20, callback_url=failing.url)
               for backend, (cluster, _) in clusters.items()}

    def failing_url(cluster):
        return [url for url in cluster.manage_json('notification', 'url',
                                                   'list')
                if url['url'] == failing.url][0]
    for backend, (cluster, database) in clusters.items():
        workflows.wait_status(database, created[backend], models.ACTIVE, 60)
        processes.wait_for(lambda: _received_all(healthy, created[backend]),
                           60, 'every %s event at the healthy receiver'
                           % backend)
        _assert_in_order(healthy, created[backend])
        processes.wait_for(
            lambda: failing_url(cluster)['waiting_deliveries'] == 20, 60,
            'every %s delivery to the failing URL to wait' % backend)
        url = failing_url(cluster)
        assert url['available'] is False
        assert url['last_error'].startswith('HTTP 500: nope')
        shown = cluster.manage_json('notification', 'show',
                                    created[backend][0])
        by_url = {row['url']: row for row in shown}
        assert (by_url[failing.url]['state'],
                by_url[failing.url]['waiting_events']) == ('PAUSED', 3)
        assert by_url[failing.url]['last_error'].startswith('HTTP 500')
        assert by_url[healthy.url]['state'] == 'DELIVERED'
    assert failing.count() == 0
    # Paused: no request goes out any more.
    requests_then = sum(failing.requests.values())
    time.sleep(3)
    assert sum(failing.requests.values()) == requests_then

    failing.fault = receivers.OK
    for backend, (cluster, _) in clusters.items():
        [enabled] = cluster.manage_json('notification', 'url', 'enable',
                                        failing.url)
        assert enabled['deliveries_resumed'] == 20, backend
    for backend, (cluster, database) in clusters.items():
        processes.wait_for(lambda: _received_all(failing, created[backend]),
                           60, 'every %s event once the URL was enabled'
                           % backend)
        _assert_in_order(failing, created[backend])
        _assert_delivered(cluster, database, created[backend])
    failing.stop()
    healthy.stop()


def test_slow_failing_and_closing_receivers_get_every_event(every_backend):
    """On each database, side by side: each receiver fails the first
    request of every event its own way."""
    faulty = {fault: receivers.Receiver(SECRET, fault=fault).start()
              for fault in (receivers.SLOW, receivers.FAIL_500,
                            receivers.FAIL_404, receivers.CLOSE)}
    clusters = every_backend(_options(
        endpoints=','.join(receiver.url for receiver in faulty.values())))
    for cluster, _ in clusters.values():
        workflows.start(cluster)
    created = {backend: _create(cluster, 5)
               for backend, (cluster, _) in clusters.items()}
    expected = {
        receivers.SLOW: 'no answer within 1s',
        receivers.FAIL_500: 'HTTP 500',
        receivers.FAIL_404: 'HTTP 404',
        receivers.CLOSE: 'request failed',
    }
    for backend, (cluster, database) in clusters.items():
        workflows.wait_status(database, created[backend], models.ACTIVE, 60)
        for fault, receiver in faulty.items():
            processes.wait_for(
                lambda: _received_all(receiver, created[backend]), 90,
                'every %s event at the %s receiver' % (backend, fault))
            _assert_in_order(receiver, created[backend])
        _assert_delivered(cluster, database, created[backend],
                          urls=len(faulty))
        # Each URL's first requests failed its own way, then went on.
        urls = {url['url']: url for url in cluster.manage_json(
            'notification', 'url', 'list')}
        for fault, receiver in faulty.items():
            assert urls[receiver.url]['last_error'].startswith(
                expected[fault]), (backend, urls[receiver.url])
            assert urls[receiver.url]['available'] is True
    for receiver in faulty.values():
        receiver.stop()


def test_a_refused_callback_url_is_an_error_at_order_create(
        deployment, database):
    cluster = deployment(_options(allowed_hosts='10.0.0.0/8,.example.org'))
    result = processes.manage(
        cluster.config, 'order', 'create', '--type', 'certificate',
        '--callback-url', 'http://127.0.0.1:9/hook', check=False,
        env=cluster.env)
    assert result.returncode != 0
    assert 'host 127.0.0.1 is not in [notifications] allowed_hosts' in \
        result.stderr
    assert cluster.manage_json('order', 'list') == []


def test_step_events_of_parallel_steps_are_numbered_without_gaps(
        deployment, database):
    """The fan-out type with step events: parallel steps of one order end
    in several worker processes at once; their events still number 1, 2,
    3 … in the order of their commits."""
    # A URL without a secret of its own: signed under the global one,
    # which the library verifies with as a key.
    hook = receivers.Receiver(SECRET, webhook_secret=SECRET.encode()).start()
    cluster = deployment(_options(workers=2, groups={
        'order_type:%s' % workflows.TYPE: {'step_events': 'true'}}))
    workflows.start(cluster, count=2)
    created = _create(cluster, 20, callback_url=hook.url,
                      order_type=workflows.TYPE)
    workflows.wait_status(database, created, models.ACTIVE, 60)
    expected = 3 + len(workflows.STEPS)
    processes.wait_for(
        lambda: all(len(hook.first_seen().get(order_id, ())) == expected
                    for order_id in created), 60, 'every step event')

    seen = hook.first_seen()
    by_id = {event['event_id']: event for event in hook.events}
    for order_id in created:
        assert seen[order_id] == list(range(1, expected + 1))
        ordered = sorted((event for event in by_id.values()
                          if event['order_id'] == order_id),
                         key=lambda event: event['sequence'])
        names = [event['event'] for event in ordered]
        assert names == ['order.created'] + ['step.done'] * len(
            workflows.STEPS) + ['order.active', 'order.end']
        steps = [event['step'] for event in ordered[1:-2]]
        assert sorted(steps) == sorted(workflows.STEPS)
        # Each step's event comes after those of the steps it follows.
        assert max(steps.index(check) for check in workflows.CHECKS) < \
            steps.index('issue') < steps.index('poll') < \
            min(steps.index('store'), steps.index('notify'))
        # The status after each change: the last step's result made the
        # order ACTIVE in the same transaction.
        assert [event['status'] for event in ordered] == [
            models.PENDING] * (expected - 3) + [models.ACTIVE] * 3
    assert (hook.bad_signatures, hook.unverified) == (0, 0)
    hook.stop()


def _set_secret(cluster, url, *args):
    """``notification url set-secret``'s answer."""
    return cluster.manage_json('notification', 'url', 'set-secret', url,
                               *args)


def _wait_for_events(receivers_and_orders):
    for receiver, created in receivers_and_orders:
        processes.wait_for(lambda: _received_all(receiver, created), 60,
                           'every event at %s' % receiver.url)
        _assert_in_order(receiver, created)
        assert receiver.unverified == 0


def _verifies(key, captured):
    """Which of the requests ``captured`` the library verifies with
    ``key``, now."""
    verifier = standardwebhooks.Webhook(key)
    found = []
    for body, headers, _ in captured:
        try:
            verifier.verify(body, headers)
            found.append(True)
        except standardwebhooks.WebhookVerificationError:
            found.append(False)
    return found


def test_standard_webhooks_per_url_secrets_rotation_and_replay(
        every_backend, monkeypatch, tmp_path):
    """On each database, side by side: two URLs with a secret each, every
    request verified by ``standardwebhooks`` at its receiver; one URL's
    secret rotated while the old one still signs, then rotated again and
    left to expire; a captured request replayed past the tolerance."""
    given = 'whsec_' + base64.b64encode(b'given secret of 32 bytes, x' +
                                        b'y' * 5).decode()
    key_file = tmp_path / 'secret-keys'
    key_file.write_text(sealing.generate_key() + '\n')
    clusters = every_backend(_options(secret_key_file=key_file))
    first_backend = next(iter(clusters))
    first = clusters[first_backend][0]
    refused = processes.manage(
        first.config, 'notification', 'url', 'set-secret',
        'http://127.0.0.1:9/hook', '--secret', 'whsec_c2hvcnQ=',
        check=False, env=first.env)
    assert refused.returncode != 0
    assert 'a key is 24 to 64 bytes, not 5' in refused.stderr
    # A URL no order named yet is added, if its host is allowed.
    refused = processes.manage(
        first.config, 'notification', 'url', 'set-secret',
        'http://10.0.0.1/hook', check=False, env=first.env)
    assert 'host 10.0.0.1 is not in [notifications] allowed_hosts' in \
        refused.stderr
    hooks, created = {}, {}
    for cluster, _ in clusters.values():
        workflows.start(cluster)
    for backend, (cluster, _) in clusters.items():
        a, b = (receivers.Receiver(SECRET), receivers.Receiver(SECRET))
        a.webhook_secret = _set_secret(cluster, a.url, '--global')[
            'generated_secret']
        assert _set_secret(cluster, b.url, '--secret', given, '--project',
                           'default') == {
            'url': b.url, 'generated_secret': None,
            'previous_secret_until': None, 'project_id': 'default'}
        b.webhook_secret = given
        # b belongs to the project "default": another's order naming it
        # is refused, and nothing is created.
        foreign = processes.manage(
            cluster.config, 'order', 'create', '--type', 'certificate',
            '--project', 'tenant-b', '--callback-url', b.url + '#',
            check=False, env=cluster.env)
        assert foreign.returncode != 0
        assert 'belongs to another project' in foreign.stderr
        hooks[backend] = (a.start(), b.start())
        created[backend] = [order['id'] for order in cluster.manage_json(
            'order', 'create', '--type', 'certificate', '--count', '2',
            '--callback-url', a.url, '--callback-url', b.url)]
    for backend, (cluster, _) in clusters.items():
        a, b = hooks[backend]
        _wait_for_events([(a, created[backend]), (b, created[backend])])
        # One receiver cannot verify the other's requests.
        assert not any(_verifies(given, a.captured))
        assert not any(_verifies(a.webhook_secret, b.captured))

    # A rotation: the receiver holding the old secret still verifies
    # (``unverified`` stays 0), one holding the new verifies at once.
    rotated, sent = {}, {}
    for backend, (cluster, _) in clusters.items():
        a = hooks[backend][0]
        rotated[backend] = _set_secret(cluster, a.url, '--keep-old-for',
                                       '1h')
        sent[backend] = len(a.captured)
        created[backend] = _create(cluster, 2, a.url)
    for backend, (a, _) in hooks.items():
        _wait_for_events([(a, created[backend])])
        assert all(_verifies(rotated[backend]['generated_secret'],
                             a.captured[sent[backend]:]))
    # What the commands show (read alike on every database): whether a
    # URL has a secret and until when the previous one signs, never the
    # secrets.
    a, b = hooks[first_backend]
    listed = first.manage_json('notification', 'url', 'list')
    until = rotated[first_backend]['previous_secret_until']
    assert [(url['url'], url['has_secret'], url['previous_secret_until'],
             url['project_id']) for url in listed] == [
        (a.url, True, until, None), (b.url, True, None, 'default')]
    shown = first.manage_json('notification', 'url', 'show', a.url)
    assert (shown['url'], shown['has_secret'],
            shown['previous_secret_until']) == (a.url, True, until)
    assert a.webhook_secret not in json.dumps([listed, shown])

    # Rotated again, the old one kept for 1 s: past it, the secret
    # before stops signing.
    for backend, (cluster, _) in clusters.items():
        a = hooks[backend][0]
        a.webhook_secret = _set_secret(cluster, a.url, '--keep-old-for',
                                       '1s')['generated_secret']
    time.sleep(1.5)
    for backend, (cluster, _) in clusters.items():
        sent[backend] = len(hooks[backend][0].captured)
        created[backend] = _create(cluster, 2, hooks[backend][0].url)
    for backend, (a, b) in hooks.items():
        _wait_for_events([(a, created[backend])])
        assert not any(_verifies(rotated[backend]['generated_secret'],
                                 a.captured[sent[backend]:]))
        a.stop()
        b.stop()

    # Each request's timestamp is when it was sent, and a captured
    # request replayed later than the tolerance (5 minutes) is refused.
    a = hooks[first_backend][0]
    for body, headers, received_at in a.captured:
        assert abs(int(headers['webhook-timestamp']) - received_at) < 5
    body, headers, _ = a.captured[-1]
    assert _verifies(a.webhook_secret, [(body, headers, None)]) == [True]
    monkeypatch.setattr(standardwebhooks.webhooks, 'datetime',
                        _later(minutes=6))
    with pytest.raises(standardwebhooks.WebhookVerificationError,
                       match='too old'):
        standardwebhooks.Webhook(a.webhook_secret).verify(body, headers)


def _later(**delta):
    """The library's ``datetime``, its ``now`` ``delta`` in the future."""
    class Later(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime.datetime.now(tz) + datetime.timedelta(**delta)
    return Later
