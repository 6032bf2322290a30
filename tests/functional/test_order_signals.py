"""Signals to a waiting step, end to end (``OrderAPI.signal``).

Real barbican-worker and barbican-retry processes, RabbitMQ and each
database run the ``certificate`` type over the recording plugin
(``tests/plugin.py``), whose authority answers "not yet, ask again in an
hour" (``poll_seconds``): without a signal, the status check would sleep
out that hour. ``order signal ... certificate.issued`` completes it at
once: the order is ACTIVE long before the poll's backoff would have run
the step again, and its history says how (one poll, then done). (The
file is not ``test_signals.py``: that one is about the processes' OS
signals.)
"""

import json

from tests.functional import processes
from tests.functional import workflows
from tests import plugin as test_plugin
from worker.db import models

ISSUED = 'certificate.issued'
REQUEST, CHECK = 'process_type_order', 'check_certificate_status'
#: The authority's "ask again after": an hour, which no test waits for.
AN_HOUR = 3600
#: How long a woken step may take to complete (RabbitMQ, a busy host):
#: far below the hour of its poll.
WOKEN_WITHIN = 60


def _signal(cluster, order_id, *args):
    """``order signal ORDER certificate.issued ARGS -f json``."""
    return cluster.manage_json('order', 'signal', order_id, ISSUED, *args)


def _check_runs(cluster, order_id):
    """The plugin's status checks of the order (the authority's calls)."""
    return [call for call in test_plugin.read_log(cluster.plugin_log)
            if call['order'] == order_id and
            call['step'] == 'check_certificate_status']


def _signals(database, order_id):
    """``[(signal_id, consumed_by)]`` of the order, oldest first."""
    with database.session() as session:
        return [(row.signal_id, row.consumed_by) for row in
                database.queries.signals.for_order(session, order_id)]


def test_a_signal_wakes_the_polling_check_long_before_its_backoff(
        deployment, database):
    cluster = deployment(workflows.options())
    workflows.start(cluster)
    [order_id] = workflows.create(cluster, meta={'poll_seconds': AN_HOUR},
                                  order_type='certificate')
    # The check asked the authority once and waits for its hour.
    processes.wait_for(
        lambda: workflows.step_rows(database, order_id)[CHECK].polls == 1,
        30, 'the status check to poll once')
    assert len(_check_runs(cluster, order_id)) == 1

    sent = _signal(cluster, order_id, '--payload', '{"serial": 7}',
                   '--signal-id', 's1')

    assert (sent['signal_id'], sent['repeated']) == ('s1', False)
    workflows.wait_status(database, [order_id], models.ACTIVE, WOKEN_WITHIN)
    order = workflows.order(database, order_id)
    assert order.meta['issued_by_signal'] == {'signal_id': 's1',
                                              'payload': {'serial': 7}}
    # Woken, the check completed from the signal: the authority was not
    # asked again.
    assert len(_check_runs(cluster, order_id)) == 1
    history = [(run['step'], run['result']) for run in cluster.manage_json(
        'order', 'history', order_id)]
    assert history == [(REQUEST, 'done'), (CHECK, 'retry'), (CHECK, 'done')]
    assert _signals(database, order_id) == [('s1', CHECK)]
    # Sent again: the first, nothing else; a new one: refused.
    assert _signal(cluster, order_id, '--signal-id', 's1')['repeated']
    refused = processes.manage(cluster.config, 'order', 'signal', order_id,
                               ISSUED, check=False, env=cluster.env)
    assert refused.returncode != 0
    assert 'is ACTIVE: only a PENDING order takes signals' in refused.stderr


def test_a_signal_sent_before_the_check_waits_is_not_lost(
        deployment, database, tmp_path):
    cluster = deployment(workflows.options())
    workflows.start(cluster)
    release = tmp_path / 'release'
    [order_id] = workflows.create(cluster, order_type='certificate', meta={
        'poll_seconds': AN_HOUR, 'hold_seconds': 120,
        'release_file': str(release)})
    # The request runs (held); the check is WAITING, far from waiting for
    # anything yet.
    workflows.wait_running(database, order_id, REQUEST)
    assert workflows.step_rows(database, order_id)[CHECK].status == \
        models.STEP_WAITING

    sent = _signal(cluster, order_id, '--payload', json.dumps('pem'))
    release.write_text('go')

    workflows.wait_status(database, [order_id], models.ACTIVE, WOKEN_WITHIN)
    # Its first run saw the signal: the authority was never polled.
    assert _check_runs(cluster, order_id) == []
    assert workflows.order(database, order_id).meta['issued_by_signal'] == {
        'signal_id': sent['signal_id'], 'payload': 'pem'}
    assert _signals(database, order_id) == [(sent['signal_id'], CHECK)]
