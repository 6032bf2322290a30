"""Resuming ERROR orders, end to end.

Real barbican-worker and barbican-retry processes, RabbitMQ and each
database run the recorded fan-out type (``tests/plugin.py:
RecordingFanout``), whose step ``fail_step`` fails for good on its first
``fail_runs`` runs, as a remote side that refused the first requests. Every
run is recorded with its token and idempotency key, as the remote side
sees them: what ran again after ``order resume`` and under which key.
Racing resumes of one order run on each database without processes.
"""

import concurrent.futures
import datetime
import getpass
import json
import socket
import threading

from oslo_config import cfg

from tests import config
from tests import fakes
from tests.functional import processes
from tests.functional import receiver as receivers
from tests.functional import workflows
from tests import singular
from worker import api
from worker.api import commands
from worker.db import models
from worker.plugins import base as plugins_base
from worker import rpc
from worker import rpcapi
from worker import values

TYPE = workflows.TYPE
CHECKS = workflows.CHECKS
LATER = ('poll', 'store', 'notify')
SECRET = 'a-test-secret'
#: The certificate type's first step.
REQUEST = 'process_type_order'
#: Concurrent resumes of one order.
RACERS = 8


def _create(cluster, meta, count=1, order_type=TYPE, callback_url=None):
    args = ['order', 'create', '--type', order_type, '--count', str(count),
            '--meta', json.dumps(meta)]
    if callback_url:
        args += ['--callback-url', callback_url]
    return [order['id'] for order in cluster.manage_json(*args)]


def _cast(transport_url, topic, steps):
    """Cast ``steps`` to the workers, as a late message would come."""
    # NOTE: oslo.messaging registers some options on the global CONF only.
    transport = rpc.get_transport(cfg.CONF, url=transport_url)
    try:
        rpcapi.WorkerAPI.from_transport(transport, topic).run_steps(steps)
    finally:
        transport.cleanup()


def _refused(cluster, *args):
    """Run a command that must fail; returns its stderr."""
    result = processes.manage(cluster.config, *args, check=False,
                              env=cluster.env)
    assert result.returncode != 0, result.stdout
    return result.stderr


def _events(hook, order_id, count):
    """The first ``count`` events of the order at ``hook``, by sequence,
    once it has them all."""
    processes.wait_for(
        lambda: len(hook.first_seen().get(order_id, ())) >= count, 60,
        '%d events of order %s' % (count, order_id))
    by_sequence = {event['sequence']: event for event in hook.events
                   if event['order_id'] == order_id}
    return [by_sequence[sequence] for sequence in range(1, count + 1)]


def test_a_resumed_order_runs_its_failed_step_again_under_the_same_key(
        deployment, database, transport_url, tmp_path):
    hook = receivers.Receiver(SECRET).start()
    cluster = deployment(workflows.options({'notifications': {
        'allowed_hosts': '127.0.0.1', 'secret': SECRET,
        'retry_base_seconds': 0.5, 'retry_max_seconds': 2}}))
    workers, _ = workflows.start(cluster)
    [order_id] = _create(cluster, {'fail_step': 'issue', 'fail_runs': 1},
                         callback_url=hook.url)
    workflows.wait_status(database, [order_id], models.ERROR, 30)
    assert workflows.order(database, order_id).error_reason == (
        'step issue failed after 1 attempt(s): issue: refused by the '
        'authority (test)')
    failed = workflows.step_rows(database, order_id)
    assert {name: failed[name].status for name in workflows.STEPS} == dict(
        {name: models.STEP_DONE for name in CHECKS},
        issue=models.STEP_FAILED,
        **{name: models.STEP_CANCELLED for name in LATER})

    # By a prefix of its id, as "order cancel" takes it.
    resumed = processes.manage(cluster.config, 'order', 'resume',
                               order_id[:8], '-f', 'json', env=cluster.env)
    [row] = json.loads(resumed.stdout)
    assert (row['id'], row['type'], row['project_id']) == (
        order_id, TYPE, models.DEFAULT_PROJECT)
    assert row['status'] in (models.PENDING, models.ACTIVE)
    assert 'Order %s resumed by user ' % order_id in resumed.stderr
    # Messages of the generation the order failed at, come late: a cast
    # of issue as it was before the resume, and of a DONE check.
    stale = failed['issue'].generation
    _cast(transport_url, cluster.topic, [
        values.StepRef('issue', order_id, stale),
        values.StepRef('check_key', order_id, 0)])
    workflows.wait_status(database, [order_id], models.ACTIVE, 30)
    workers.wait_for_log('Dropped issue of order %s with stale token %d'
                         % (order_id, stale))
    workers.wait_for_log('Dropped check_key of order %s with stale token 0'
                         % order_id)

    runs = workflows.runs(cluster)
    # The DONE checks did not run again; issue ran once more, under its
    # own key, and what came after it ran once.
    for name in CHECKS + LATER:
        assert len(runs[order_id, name]) == 1, name
    key = plugins_base.idempotency_key(order_id, 'issue')
    assert [(run['token'], run['key'], run['result'])
            for run in runs[order_id, 'issue']] == [
        (stale, key, 'Failed'), (stale + 2, key, 'Completed')]
    order = workflows.order(database, order_id)
    assert (order.error_reason, order.meta['request']) == (None, key)
    rows = workflows.step_rows(database, order_id)
    # Its attempts started again: one run since the resume, no failure.
    assert (rows['issue'].status, rows['issue'].attempt,
            rows['issue'].failures, rows['issue'].last_error) == (
        models.STEP_DONE, 1, 0, None)
    assert rows['issue'].started_at > failed['issue'].finished_at
    for name in CHECKS:
        assert (rows[name].attempt, rows[name].finished_at) == (
            1, failed[name].finished_at)

    # Its subscriber hears it end, then resumed, then end again.
    events = _events(hook, order_id, 6)
    assert [(event['event'], event['status']) for event in events] == [
        ('order.created', models.PENDING), ('order.error', models.ERROR),
        ('order.end', models.ERROR), ('order.resumed', models.PENDING),
        ('order.active', models.ACTIVE), ('order.end', models.ACTIVE)]
    assert hook.bad_signatures == 0
    hook.stop()

    # Only an ERROR order resumes: not an ACTIVE one, nor a cancelled one.
    assert 'order %s is ACTIVE: only an ERROR order can be resumed' % \
        order_id in _refused(cluster, 'order', 'resume', order_id)
    # Held until the cancel is done, however long the command takes.
    release = tmp_path / 'release'
    [cancelled] = _create(cluster, {'hold_seconds': 120,
                                    'release_file': str(release),
                                    'hold_step': 'check_domains'})
    workflows.wait_running(database, cancelled, 'check_domains')
    processes.manage(cluster.config, 'order', 'cancel', cancelled,
                     env=cluster.env)
    release.touch()
    workflows.wait_status(database, [cancelled], models.CANCELLED, 60)
    assert 'order %s is CANCELLED: only an ERROR order can be resumed' % \
        cancelled in _refused(cluster, 'order', 'resume', cancelled)


def test_failed_orders_are_resumed_in_bulk_by_type_and_limit(
        deployment, database):
    cluster = deployment(workflows.options(
        {'worker': {'workers': 2}},
        # A fanout order gives up at its first unavailable check_key.
        {'step:fanout.check_key': {'max_attempts': 1,
                                   'backoff_base_seconds': 0.2}}))
    workflows.start(cluster, count=2)
    # check_key is refused once while check_domains is held: the failure
    # cancels check_domains, running or not yet started.
    failing = _create(cluster, {'fail_step': 'check_key', 'fail_runs': 1,
                                'hold_seconds': 2,
                                'hold_step': 'check_domains'}, count=3)
    [again] = _create(cluster, {'unavailable_attempts': 1},
                      order_type='fanout')
    workflows.wait_status(database, failing + [again], models.ERROR, 30)
    done_before = {}
    for order_id in failing:
        rows = workflows.step_rows(database, order_id)
        assert (rows['check_key'].status, rows['check_domains'].status) == (
            models.STEP_FAILED, models.STEP_CANCELLED)
        done_before[order_id] = {name for name in CHECKS
                                 if rows[name].status == models.STEP_DONE}

    assert 'only ERROR orders can be resumed, not ACTIVE orders' in \
        _refused(cluster, 'order', 'resume', '--status', 'ACTIVE')
    assert 'not allowed with argument' in _refused(
        cluster, 'order', 'resume', failing[0], '--status', 'ERROR')
    future = (datetime.datetime.now(datetime.timezone.utc) +
              datetime.timedelta(hours=1)).isoformat()
    assert cluster.manage_json('order', 'resume', '--status', 'ERROR',
                               '--since', future) == []

    # Those changed least recently (updated_at) first.
    first = sorted(failing, key=lambda order_id: (
        workflows.order(database, order_id).updated_at, order_id))
    resumed = cluster.manage_json('order', 'resume', '--status', 'ERROR',
                                  '--type', TYPE, '--limit', '2')
    assert [(row['id'], row['type'], row['project_id']) for row in
            resumed] == [(order_id, TYPE, models.DEFAULT_PROJECT)
                         for order_id in first[:2]]
    workflows.wait_status(database, first[:2], models.ACTIVE, 30)
    assert workflows.status(database, first[2]) == models.ERROR
    assert workflows.status(database, again) == models.ERROR
    resumed = cluster.manage_json('order', 'resume', '--status', 'ERROR',
                                  '--type', TYPE)
    assert [row['id'] for row in resumed] == [first[2]]
    workflows.wait_status(database, failing, models.ACTIVE, 30)

    runs = workflows.runs(cluster)
    for order_id in failing:
        # The checks DONE when check_key failed did not run again (check_caa,
        # unless check_key was quicker); the others ran again under their
        # keys. The held run of check_domains, if it had started, ended
        # without effect.
        for name in CHECKS:
            if name in done_before[order_id]:
                assert len(runs[order_id, name]) == 1, name
            assert {run['key'] for run in runs[order_id, name]} == {
                plugins_base.idempotency_key(order_id, name)}
            assert runs[order_id, name][-1]['result'] == 'Completed'
        assert [run['result'] for run in runs[order_id, 'check_key']] == [
            'Failed', 'Completed']

    # An order that fails again after a resume can be resumed again.
    for _ in range(2):
        [row] = cluster.manage_json('order', 'resume', again)
        assert row['id'] == again
        workflows.wait_status(database, [again], models.ERROR, 30)
    assert workflows.order(database, again).error_reason.startswith(
        'step check_key ')


def _failed_certificate(database, orders):
    """A certificate order whose first step FAILED: ERROR, without
    processes."""
    order = orders.create('certificate', {}, project_id='p')
    repositories = database.repositories
    now = orders.now()
    with database.session() as session, session.begin():
        assert singular.claim(repositories.steps, session, order.id, REQUEST,
                              0, now, 'w@h', now)
        assert singular.finish(repositories.steps, session, order.id, REQUEST,
                               1, now, models.STEP_FAILED, last_error='no')
        assert repositories.orders.fail(session, order.id, now, 'failed')
        repositories.steps.revoke_open(session, order.id, now, 'failed')
    return order


def test_the_operator_commands_record_who_asked_in_the_history(
        deployment, database):
    cluster = deployment(workflows.options())
    orders = api.OrderAPI(database, config.make_conf())
    failed = _failed_certificate(database, orders)
    pending = orders.create('certificate', {}, project_id='p')
    processes.manage(cluster.config, 'order', 'resume', failed.id,
                     env=cluster.env)
    processes.manage(cluster.config, 'order', 'cancel', pending.id,
                     '--reason', 'not needed', env=cluster.env)
    operator = '%s@%s' % (getpass.getuser(), socket.gethostname())
    for order_id, step, error in ((failed.id, 'order:resume', None),
                                  (pending.id, 'order:cancel', 'not needed')):
        history = cluster.manage_json('order', 'history', order_id)
        [row] = [run for run in history if run['result'] == 'requested']
        assert (row['step'], row['attempt'], row['worker'], row['error']) \
            == (step, 0, None, error)
        who = json.loads(row['requested_by'])
        assert (who['actor'], who['os_user'], who['user_id'],
                who['project_id']) == ('operator', operator, None, None)
    # The resume's request id is the one its log line names.
    [resumed] = [run for run in orders.history(failed.id, all_projects=True)
                 if run.step == models.RUN_RESUME]
    assert resumed.requested_by['request_id'].startswith('req-')


def test_of_racing_resumes_exactly_one_resumes(database, monkeypatch):
    orders = api.OrderAPI(database, config.make_conf())
    order = _failed_certificate(database, orders)
    repositories = database.repositories
    # Every racer has read the order ERROR before any of them writes.
    start = threading.Barrier(RACERS)
    real = commands.resume

    def racing(*args, **kwargs):
        start.wait(timeout=30)
        return real(*args, **kwargs)
    monkeypatch.setattr(commands, 'resume', racing)
    with fakes.log_lines('worker.api') as lines, \
            concurrent.futures.ThreadPoolExecutor(RACERS) as pool:
        returned = list(pool.map(
            lambda _: orders.resume(order.id, all_projects=True),
            range(RACERS)))

    assert {(resumed.id, resumed.status) for resumed in returned} == {
        (order.id, models.PENDING)}
    assert len(lines.about('Order %s resumed by' % order.id)) == 1
    assert len(lines.about('resumed by another request first')) == \
        RACERS - 1
    # The step was restarted once: one generation on.
    with database.reader() as session:
        step = repositories.steps.for_order(session, order.id)[REQUEST]
    assert (step.status, step.generation) == (models.STEP_PENDING, 2)
    # And its history records one resume.
    assert [run.step for run in orders.history(order.id, all_projects=True)
            if run.result == models.RUN_REQUESTED] == [models.RUN_RESUME]
