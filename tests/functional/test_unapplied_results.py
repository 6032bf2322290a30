"""A result that cannot be applied, on every database: a real worker
process gets step outputs that cannot be written (not JSON); their
results fail their own orders, and the other orders of the same batches
complete (``worker.steps.apply``). (An order type that gains a step with
orders in flight no longer makes one: ``test_workflow_versions.py``.)
What a database server that goes away raises is an outage
(``worker.steps.transactions.is_outage``): the results are kept, none is
failed.
"""

import datetime
import json
import os
import socket
import threading

import pytest

from tests.functional import processes
from tests.functional import workflows
from tests import singular
from worker.db import models
from worker.db import session as db_session
from worker import order_types
from worker.steps import transactions

TYPE = 'growing'
COUNT = 8


def _create(cluster, gate, unwritable=False):
    """``COUNT`` orders of ``growing``, their first step held until
    ``gate`` exists; with ``unwritable``, its output cannot be written."""
    meta = {'gate': gate}
    if unwritable:
        meta['unwritable'] = True
    created = processes.manage(
        cluster.config, 'order', 'create', '--type', TYPE, '--count',
        str(COUNT), '--meta', json.dumps(meta), '-f', 'json',
        env=cluster.env)
    return [order['id'] for order in json.loads(created.stdout)]


def test_results_that_cannot_be_written_fail_their_orders_alone(
        deployment, database, tmp_path):
    cluster = deployment(workflows.options())
    gate = os.path.join(str(tmp_path), 'gate')
    workers = cluster.start('barbican-worker', 'worker')
    cluster.start('barbican-retry', 'retry')
    workers.wait_for_log('serving topic')
    bad = _create(cluster, gate, unwritable=True)
    good = _create(cluster, gate)
    for order_id in bad + good:
        workflows.wait_running(database, order_id, 'first', timeout=60)

    # Every first step ends at once: their results share batches.
    open(gate, 'w').close()

    workflows.wait_status(database, good, models.ACTIVE, 60)
    workflows.wait_status(database, bad, models.ERROR, 60)
    for order_id in bad:
        order = workflows.order(database, order_id)
        assert order.error_reason.startswith(
            'step first failed: its result could not be applied ('), \
            order.error_reason
        assert 'is not JSON serializable' in order.error_reason
        assert workflows.step_rows(database, order_id)['first'].status == \
            models.STEP_FAILED
    # Failed visibly, once each, by a worker that goes on.
    log = workers.log()
    assert log.count('; the step fails') == COUNT, log
    assert 'Traceback' in log and 'kept and written again' not in log
    assert workers.process.poll() is None
    assert workers.stop() == 0


class _Relay:
    """A TCP relay to a database server, which a test cuts: the server
    goes away for the clients connected through it."""

    def __init__(self, port):
        self._port = port
        self._listener = socket.create_server(('127.0.0.1', 0))
        self.port = self._listener.getsockname()[1]
        self._sockets = []
        self._open = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self._open:
                # Accepted by a thread blocked in accept() as it closed.
                client.close()
                return
            server = socket.create_connection(('127.0.0.1', self._port))
            self._sockets += [client, server]
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(source, sink),
                                 daemon=True).start()

    @staticmethod
    def _pipe(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass

    def cut(self):
        """Close every connection; refuse new ones."""
        self._open = False
        try:
            # Wakes the thread blocked in accept().
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        for connection in self._sockets:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            connection.close()


@pytest.mark.parametrize('backend', ['postgresql', 'mysql'])
def test_a_database_server_gone_is_an_outage(database, database_url):
    port = int(database_url.split('@127.0.0.1:')[1].split('/')[0])
    relay = _Relay(port)
    relayed = db_session.Database.from_url(
        database_url.replace(':%d/' % port, ':%d/' % relay.port),
        max_retries=1, retry_interval=1)
    now = datetime.datetime(2026, 11, 22, 12, 0, 0)
    with relayed.session() as session, session.begin():
        order_id = relayed.repositories.orders.create(
            session, order_types.get('certificate'), {}, now).id
    relay.cut()

    # The connection it held is lost; then no connection is accepted.
    for _ in range(2):
        with pytest.raises(Exception) as raised:
            with relayed.session() as session, session.begin():
                singular.claim(relayed.repositories.steps, session, order_id,
                               'process_type_order', 0, now, 'w@h', now)
        assert transactions.is_outage(raised.value), raised.value
    relayed.dispose()
