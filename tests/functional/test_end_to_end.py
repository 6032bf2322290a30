"""The blueprint end to end: real worker and retry processes, RabbitMQ."""

import datetime
import re
import time

import amqp
import kombu
import pytest

from tests.functional import counting
from tests.functional import processes
from worker.db import locks
from worker.db import models
from worker.db import orders
from worker.db import retry_tasks

DELAY = 2
PERIOD = 2
JITTER = 0.2


OPTIONS = {
    'scheduler': {'schedule_period_seconds': PERIOD,
                  'schedule_jitter': JITTER, 'batch_size': 100},
    'worker': {'workers': 2},
    'simple_certificate': {'delay_before_update_seconds': DELAY},
}


def test_certificate_orders_all_become_active(deployment, database):
    _all_become_active(deployment(OPTIONS), database)


@pytest.mark.parametrize('backend', ['postgresql'])
def test_certificate_orders_all_become_active_on_quorum_queues(
        deployment, database, transport_url):
    cluster = deployment(dict(OPTIONS, oslo_messaging_rabbit={
        'rabbit_quorum_queue': 'true'}))
    _all_become_active(cluster, database)
    # The workers' queue is a quorum queue: declaring it classic is
    # refused as inequivalent.
    url = transport_url.replace('rabbit://', 'amqp://', 1)
    with kombu.Connection(url) as connection:
        with pytest.raises(amqp.exceptions.PreconditionFailed,
                           match='x-queue-type'):
            kombu.Queue(cluster.topic, durable=True)(
                connection.channel()).declare()


def _all_become_active(cluster, database):
    """200 certificate orders through 2 worker processes and a daemon."""
    config = cluster.config
    workers = cluster.start('barbican-worker', 'worker')
    retry = cluster.start('barbican-retry', 'retry')
    workers.wait_for_log('serving topic', count=2)
    retry.wait_for_log('Retry scheduler started')

    created = processes.manage_json(config, 'order', 'create', '--type',
                                    'certificate', '--count', '200')
    assert len(created) == 200

    started = time.monotonic()
    deadline = started + 3 * (DELAY + PERIOD * (1 + JITTER))
    while time.monotonic() < deadline:
        with database.session() as session:
            counts = orders.count_by_status(session)
        if counts.get(models.ACTIVE) == 200:
            break
        time.sleep(0.2)
    assert counts == {models.ACTIVE: 200}
    print('200 orders ACTIVE in %.1fs (bound %.1fs)'
          % (time.monotonic() - started, deadline - started))

    assert retry.stop() == 0
    assert workers.stop() == 0
    assert processes.manage_json(config, 'retry', 'list') == []
    assert processes.manage_json(config, 'lock', 'show')['held'] is False
    assert processes.manage_json(
        config, 'order', 'list', '--status', 'PENDING') == []
    shown = processes.manage_json(config, 'order', 'show', created[0]['id'])
    assert shown['status'] == models.ACTIVE
    assert [(step['name'], step['status']) for step in shown['steps']] == [
        ('process_type_order', models.STEP_DONE),
        ('check_certificate_status', models.STEP_DONE)]


def test_two_daemons_cast_each_due_row_exactly_once(deployment, database,
                                                    transport_url):
    # Short passes and periods, so that the two daemons take turns; one
    # row per message, so that a pass lasts.
    cluster = deployment({
        'scheduler': {'schedule_period_seconds': 1, 'schedule_jitter': 0.5,
                      'max_pass_seconds': 1, 'batch_size': 50,
                      'cast_concurrency': 2, 'rows_per_cast': 1}})
    topic = cluster.topic
    counting.add_due_retries(database, 2000)
    with counting.counting_server(transport_url, topic) as endpoint:
        daemons = [cluster.start('barbican-retry', 'retry-%d' % i)
                   for i in (1, 2)]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and \
                endpoint.total() < 2000:
            time.sleep(0.2)
        time.sleep(2 * PERIOD)   # room for a late duplicate to show up
        for daemon in daemons:
            assert daemon.stop() == 0
    assert len(endpoint.received) == 2000
    assert set(endpoint.received.values()) == {1}
    with database.session() as session:
        assert retry_tasks.list_tasks(session) == []
        assert locks.get(session, models.ORDER_RETRY_TASK_LOCK) is None
    # The daemons did contend: a pass found the other's lock, or both cast.
    logs = [daemon.log() for daemon in daemons]
    assert (any('lock held by another process' in log for log in logs) or
            all('Pass dispatched' in log for log in logs))


_EPOCH = datetime.datetime(1970, 1, 1)
_PASS_LINE = re.compile(
    r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) .*Pass found nothing due',
    re.MULTILINE)


def _pass_times(daemon):
    return [datetime.datetime.strptime(stamp, '%Y-%m-%d %H:%M:%S.%f')
            for stamp in _PASS_LINE.findall(daemon.log())]


@pytest.mark.parametrize('backend', ['sqlite'])
def test_two_daemons_take_turns_each_in_its_slot(deployment):
    period = 4
    cluster = deployment({'scheduler': {'schedule_period_seconds': period,
                                        'schedule_jitter': 0}})
    daemons = [cluster.start('barbican-retry', 'retry-%d' % i)
               for i in (1, 2)]
    for daemon in daemons:
        # Four periods and a start, which a busy machine stretches.
        daemon.wait_for_log('Pass found nothing due', count=4,
                            timeout=20 * period)
    for daemon in daemons:
        assert daemon.stop() == 0
    # From the moment both have passed twice (both know of the other).
    runs = [_pass_times(daemon) for daemon in daemons]
    since = max(times[1] for times in runs)
    passes = sorted((at, index) for index, times in enumerate(runs)
                    for at in times if at > since)
    assert len(passes) >= 3
    # They alternate, each at the start of its half of the period on the
    # clock (0 s and 2 s past a multiple of 4 s), so that a pass comes
    # every period / 2. Timers independent of each other would pass at
    # random points of the period.
    assert all(a[1] != b[1] for a, b in zip(passes, passes[1:])), passes

    def slot_of(index):
        """The half of the period all passes of ``index`` start in."""
        phases = [(at - _EPOCH).total_seconds() % period
                  for at, i in passes if i == index]
        for start in (0, period / 2):
            off = [min(abs(p - start), period - abs(p - start))
                   for p in phases]
            if max(off) <= 0.4:
                return start
        raise AssertionError('passes off any slot: %s' % phases)
    assert slot_of(0) != slot_of(1)


@pytest.mark.parametrize('backend', ['sqlite'])
def test_a_retry_due_before_the_daemons_slot_is_cast_when_due(
        deployment, database, transport_url):
    cluster = deployment({'scheduler': {'schedule_period_seconds': 600}})
    due = datetime.datetime.utcnow() + datetime.timedelta(seconds=5)
    with database.session() as session, session.begin():
        order_id = counting.waiting_order(session, due, retry_at=due)
    with counting.counting_server(transport_url, cluster.topic) as endpoint:
        daemon = cluster.start('barbican-retry', 'retry')
        # Its slot is somewhere in the next 600 s; the row is due in 5 s.
        deadline = time.monotonic() + 30
        while endpoint.total() == 0 and time.monotonic() < deadline:
            time.sleep(0.1)
        cast_at = datetime.datetime.utcnow()
        assert daemon.stop() == 0
    assert endpoint.received == {order_id: 1}
    assert cast_at >= due
