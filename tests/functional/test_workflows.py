"""Order types as declared workflows, end to end.

Real barbican-worker and barbican-retry processes, RabbitMQ and each
database run the recorded fan-out type (``tests/plugin.py:
RecordingFanout``): three checks in parallel, issue, poll, then store and
notify in parallel. Every run of a step is recorded with its token and
its idempotency key, as a remote service would see it.
"""

import time

from tests.functional import processes
from tests.functional import workflows
from worker.db import models
from worker.plugins import base as plugins_base

CHECKS = workflows.CHECKS
STEPS = workflows.STEPS


def test_fanout_orders_run_their_checks_in_parallel_then_join(
        deployment, database):
    cluster = deployment(workflows.options(
        {'worker': {'workers': 2},
         # One message per order: its three checks travel together.
         'scheduler': {'rows_per_cast': 3}},
        # Every step finds the remote side unavailable once; check_caa and
        # check_key run again 1.5 s later, in the middle of the 3 s that
        # check_domains' first run is held.
        *({workflows.step_group(step): {
            'backoff': 'constant', 'backoff_base_seconds': 1.5,
            'jitter': 'false'}} for step in ('check_caa', 'check_key'))))
    workflows.start(cluster, count=2)
    created = workflows.create(cluster, count=5, meta={
        'hold_seconds': 3, 'hold_step': 'check_domains',
        'unavailable_attempts': 1})
    workflows.wait_status(database, created, models.ACTIVE, 40)

    runs = workflows.runs(cluster)
    for order_id in created:
        # Each run under its own claim: one failed run, one that did it.
        for step in STEPS:
            assert [(run['token'], run['result'])
                    for run in runs[order_id, step]] == [
                (1, 'RemoteUnavailable'), (2, 'Completed')], step
        held = runs[order_id, 'check_domains'][0]
        assert held['ended'] - held['started'] >= 3
        # The three checks ran at one moment: the two others did not wait
        # for the held one.
        for step in ('check_caa', 'check_key'):
            assert workflows.overlaps(held, runs[order_id, step][-1]), step
        # issue joins them; poll follows issue; store and notify follow
        # poll.
        _assert_after(runs, order_id, CHECKS, 'issue')
        _assert_after(runs, order_id, ('issue',), 'poll')
        _assert_after(runs, order_id, ('poll',), 'store')
        _assert_after(runs, order_id, ('poll',), 'notify')

        meta = workflows.order(database, order_id).meta
        assert meta == {
            'hold_seconds': 3, 'hold_step': 'check_domains',
            'unavailable_attempts': 1, 'domains_checked': 'ok',
            'caa_checked': 'ok', 'key_checked': 'ok',
            'request': runs[order_id, 'issue'][-1]['key'],
            'certificate': 'fanout-%s' % order_id, 'stored': 'ok',
            'notified': 'ok'}
        rows = workflows.step_rows(database, order_id)
        assert {name: (row.status, row.attempt, row.owner)
                for name, row in rows.items()} == {
            name: (models.STEP_DONE, 2, None) for name in STEPS}
    assert cluster.manage_json('retry', 'list') == []


def _assert_after(runs, order_id, before, step):
    """Every run of ``step`` started after every run of ``before`` ended.
    """
    first = min(run['started'] for run in runs[order_id, step])
    assert all(run['ended'] <= first
               for name in before for run in runs[order_id, name]), (
        order_id, before, step)


def test_a_step_past_its_lease_on_a_live_worker_is_run_again(
        deployment, database, tmp_path):
    # A grace shorter than the hold: the step is taken back while its
    # first run still holds, held until the order is done without it.
    cluster = deployment(workflows.options(
        {workflows.step_group('issue'): {'timeout_seconds': 1.5},
         'worker': {'lease_grace_seconds': 0.5}}))
    workers, retry = workflows.start(cluster)
    release = tmp_path / 'release'
    [order_id] = workflows.create(cluster, meta={
        'hold_seconds': 120, 'release_file': str(release)})
    owner = workflows.wait_running(database, order_id, 'issue')

    workflows.wait_status(database, [order_id], models.ACTIVE, 60)
    release.touch()
    workers.wait_for_log('Step issue of order %s moved past token 1 while '
                         'it ran; its result was discarded' % order_id,
                         timeout=15)

    # The worker stayed alive all along; the retry daemon took the step
    # back because its lease ended, and another run under token 3 did it
    # while the first was still going.
    assert workers.process.poll() is None
    assert 'Step issue of order %s taken back and dispatched again: its ' \
        'lease ended on %s' % (order_id, owner) in retry.log()
    first, second = workflows.runs(cluster)[order_id, 'issue']
    assert (first['token'], second['token']) == (1, 3)
    assert workflows.overlaps(first, second)
    assert first['key'] == second['key']
    # The late result of token 1 changed nothing: only token 3's result
    # of issue was written, and the order turned ACTIVE once.
    log = workers.log()
    assert log.count('Order %s (issue' % order_id) == 1
    assert log.count('Order %s (issue, token 3)' % order_id) == 1
    assert log.count('done, ACTIVE') == 1
    row = workflows.step_rows(database, order_id)['issue']
    assert (row.status, row.attempt, row.failures) == (
        models.STEP_DONE, 2, 1)
    # The order's history (doc/operations.md, "order history"): the first
    # run taken back at the end of its lease, the second done, the first
    # ended later, its result discarded.
    assert [(run['attempt'], run['worker'], run['result'], run['error'])
            for run in cluster.manage_json('order', 'history', order_id)
            if run['step'] == 'issue'] == [
        (1, owner, 'taken back', 'its lease ended on %s' % owner),
        (2, owner, 'done', None),
        (1, owner, 'superseded', None)]


def test_one_idempotency_key_per_step_while_workers_are_killed(
        deployment, database):
    cluster = deployment(workflows.options({'worker': {'workers': 2}}))
    workers, retry = workflows.start(cluster, count=2)
    # Each step finds the remote side unavailable once, so every step runs
    # at least twice; issue's first run is held until its worker dies.
    created = workflows.create(cluster, count=6, meta={
        'hold_seconds': 60, 'unavailable_attempts': 1})
    owners = {workflows.wait_running(database, order_id, 'issue')
              for order_id in created}
    workers.kill()                      # SIGKILL, in the middle of issue
    replacement = cluster.start('barbican-worker', 'worker-2')
    replacement.wait_for_log('serving topic', count=2)

    workflows.wait_status(database, created, models.ACTIVE, 45)
    for owner in owners:
        assert 'Service %s stopped heartbeating' % owner in retry.log()
    runs = workflows.runs(cluster)
    keys = {}
    for order_id in created:
        for step in STEPS:
            done = runs[order_id, step]
            assert len(done) >= 2, (order_id, step, done)
            tokens = [run['token'] for run in done]
            assert tokens == sorted(set(tokens)), (order_id, step, tokens)
            # What the remote service saw: one key for all the runs.
            [keys[order_id, step]] = {run['key'] for run in done}
            assert keys[order_id, step] == plugins_base.idempotency_key(
                order_id, step)
        # The killed run of issue (token 1) never reported; the runs
        # after the takeover sent the key the order kept as its request.
        assert runs[order_id, 'issue'][0]['token'] > 1
        assert workflows.order(database, order_id).meta['request'] == \
            keys[order_id, 'issue']
    assert len(set(keys.values())) == len(created) * len(STEPS)


def test_cancel_revokes_the_running_step_and_compensates(
        deployment, database, tmp_path):
    # One step at a time: the compensation waits in the queue while the
    # held issue runs, so the order is seen CANCELLING meanwhile (and its
    # dispatch is not taken for lost).
    cluster = deployment(workflows.options(
        {'DEFAULT': {'executor_thread_pool_size': 1},
         'scheduler': {'dispatch_deadline_seconds': 30}}))
    workers, _ = workflows.start(cluster)
    # Held until the cancel is done, however long the command takes.
    release = tmp_path / 'release'
    [order_id] = workflows.create(cluster, meta={
        'hold_seconds': 120, 'release_file': str(release)})
    workflows.wait_running(database, order_id, 'issue')

    cancelled = processes.manage(cluster.config, 'order', 'cancel',
                                 order_id, env=cluster.env)
    assert cancelled.stdout.strip() == ('order %s cancelling: compensation '
                                        'revoke started' % order_id)
    assert workflows.status(database, order_id) == models.CANCELLING
    release.touch()
    workflows.wait_status(database, [order_id], models.CANCELLED, 60)
    workers.wait_for_log('Step issue of order %s moved past token 1 while '
                         'it ran; its result was discarded' % order_id)
    workers.wait_for_log('Order %s (revoke, token 1): compensation revoke '
                         'done, CANCELLED' % order_id)

    runs = workflows.runs(cluster)
    [issue] = runs[order_id, 'issue']
    assert (issue['token'], issue['result']) == (1, 'Completed')
    [revoke] = runs[order_id, 'revoke']
    assert revoke['result'] == 'Completed'
    rows = workflows.step_rows(database, order_id)
    assert {name: row.status for name, row in rows.items()} == dict(
        {name: models.STEP_DONE for name in CHECKS},
        issue=models.STEP_CANCELLED, poll=models.STEP_CANCELLED,
        store=models.STEP_CANCELLED, notify=models.STEP_CANCELLED,
        revoke=models.STEP_DONE)
    # issue was not done when the order was cancelled: nothing to revoke.
    assert rows['revoke'].output == {'revoked': False}
    order = workflows.order(database, order_id)
    assert order.error_reason == 'cancelled by an operator'
    assert 'request' not in order.meta
    time.sleep(1.5)     # a pass or two: nothing after issue ever runs
    assert not [key for key in workflows.runs(cluster)
                if key[0] == order_id and key[1] in ('poll', 'store',
                                                     'notify')]
    assert cluster.manage_json('retry', 'list') == []


def test_cancel_of_a_type_without_compensation_is_at_once(
        deployment, database, tmp_path):
    cluster = deployment(workflows.options())
    workers, _ = workflows.start(cluster)
    # The step runs until the cancel is done, however long the command
    # takes on a busy machine.
    release = tmp_path / 'cancelled'
    [order_id] = workflows.create(cluster, order_type='certificate',
                                  meta={'hold_seconds': 120,
                                        'release_file': str(release)})
    workflows.wait_running(database, order_id, 'process_type_order')

    cancelled = processes.manage(cluster.config, 'order', 'cancel',
                                 order_id, env=cluster.env)
    assert cancelled.stdout.strip() == 'order %s cancelled' % order_id
    assert workflows.status(database, order_id) == models.CANCELLED
    release.touch()
    workers.wait_for_log('Step process_type_order of order %s moved past '
                         'token 1 while it ran; its result was discarded'
                         % order_id)
    assert workflows.status(database, order_id) == models.CANCELLED
    assert {name: row.status for name, row in workflows.step_rows(
        database, order_id).items()} == {
            'process_type_order': models.STEP_CANCELLED,
            'check_certificate_status': models.STEP_CANCELLED}
    # Again: nothing changes (worker.api's cancel is idempotent).
    again = processes.manage(cluster.config, 'order', 'cancel', order_id,
                             env=cluster.env)
    assert again.stdout.strip() == 'order %s cancelled' % order_id
    assert workflows.status(database, order_id) == models.CANCELLED


def test_a_policy_that_gives_up_names_the_step_and_the_attempts(
        deployment, database):
    cluster = deployment(workflows.options(
        {workflows.step_group('check_key'): {'max_attempts': 2}}))
    workflows.start(cluster)
    # Three times unavailable: check_key may fail twice only.
    [order_id] = workflows.create(cluster,
                                  meta={'unavailable_attempts': 3})
    workflows.wait_status(database, [order_id], models.ERROR, 20)

    order = workflows.order(database, order_id)
    assert order.error_reason == (
        'step check_key gave up after 2 attempts; last error: remote '
        'service unavailable: check_key: remote service unavailable (demo)')
    runs = workflows.runs(cluster)[order_id, 'check_key']
    assert [run['result'] for run in runs] == ['RemoteUnavailable'] * 2
    steps = {step['name']: step for step in cluster.manage_json(
        'order', 'show', order_id)['steps']}
    assert (steps['check_key']['status'], steps['check_key']['attempt']) \
        == (models.STEP_FAILED, 2)
    # The order is over: its other steps were stopped, none runs again.
    assert {name: step['status'] for name, step in steps.items()
            if name != 'check_key'} == {
        name: models.STEP_CANCELLED for name in STEPS
        if name != 'check_key'}
    assert cluster.manage_json('retry', 'list') == []


def test_order_types_are_listed_and_an_unknown_one_is_refused(deployment):
    cluster = deployment(workflows.options())
    refused = processes.manage(cluster.config, 'order', 'create', '--type',
                               'nosuchtype', check=False, env=cluster.env)
    assert refused.returncode != 0
    assert "unknown order type 'nosuchtype'; installed: certificate, " \
        "changing, fanout, growing, recording_fanout, recording_limited, " \
        "remote_call, single_step, sleeping" in refused.stderr

    listed = {entry['name']: entry for entry in cluster.manage_json(
        'order', 'type', 'list')}
    assert set(listed) == {'certificate', 'changing', 'fanout', 'growing',
                           'recording_fanout',
                           'recording_limited', 'remote_call',
                           'single_step', 'sleeping'}
    assert listed['certificate']['steps'] == [
        {'name': 'process_type_order', 'after': []},
        {'name': 'check_certificate_status',
         'after': ['process_type_order']}]
    checks = [{'name': name, 'after': []} for name in CHECKS]
    assert listed['recording_fanout']['steps'] == checks + [
        {'name': 'issue', 'after': list(CHECKS)},
        {'name': 'poll', 'after': ['issue']},
        {'name': 'store', 'after': ['poll']},
        {'name': 'notify', 'after': ['poll']}]
    assert listed['fanout']['steps'] == listed['recording_fanout']['steps']
    # The schema in JSON, as the type declares it (tests/plugin.py).
    assert listed['fanout']['meta_schema']['additionalProperties'] is False
    assert set(listed['recording_fanout']['meta_schema']['properties']) == {
        'unavailable_attempts', 'polls', 'hold_seconds', 'hold_step',
        'extend_lease_seconds', 'kill_worker', 'fail_step', 'fail_runs',
        'release_file'}


def test_order_show_and_explain_say_what_each_step_does(
        deployment, database):
    cluster = deployment(workflows.options(
        # check_domains waits a minute after its one failure.
        {workflows.step_group('check_domains'): {
            'backoff': 'constant', 'backoff_base_seconds': 60,
            'backoff_max_seconds': 60, 'jitter': 'false'}}))
    workflows.start(cluster)
    # Every step fails once; check_caa's first run is held 30 s.
    [order_id] = workflows.create(cluster, meta={
        'unavailable_attempts': 1, 'hold_seconds': 30,
        'hold_step': 'check_caa'})
    # The worker's service name (pid@host) is the step's owner.
    worker_name = workflows.wait_running(database, order_id, 'check_caa')
    assert worker_name in {service.name for service in
                           workflows.services(database)}
    processes.wait_for(
        lambda: workflows.step_rows(database, order_id)[
            'check_key'].status == models.STEP_DONE,
        10, 'check_key to be done after its retry')

    shown = cluster.manage_json('order', 'show', order_id)
    assert shown['status'] == models.PENDING
    assert [step['name'] for step in shown['steps']] == list(STEPS)
    assert all(set(step) == {
        'name', 'after', 'status', 'attempt', 'owner', 'started_at',
        'finished_at', 'next_retry_at', 'last_error', 'crashes',
        'waiting_for'}
        for step in shown['steps'])
    steps = {step['name']: step for step in shown['steps']}
    assert [steps[name]['after'] for name in STEPS] == [
        [], [], [], list(CHECKS), ['issue'], ['poll'], ['poll']]
    running, waiting, done = (steps['check_caa'], steps['check_domains'],
                              steps['check_key'])
    assert (running['status'], running['attempt'], running['owner'],
            running['finished_at'], running['next_retry_at'],
            running['last_error']) == ('RUNNING', 1, worker_name, None,
                                       None, None)
    assert running['started_at']
    unavailable = ('remote service unavailable: check_domains: remote '
                   'service unavailable (demo)')
    assert (waiting['status'], waiting['attempt'], waiting['owner'],
            waiting['finished_at'], waiting['last_error']) == (
        'RETRYING', 1, None, None, unavailable)
    assert waiting['started_at'] and waiting['next_retry_at']
    assert (done['status'], done['attempt'], done['owner'],
            done['next_retry_at']) == (models.STEP_DONE, 2, None, None)
    assert done['started_at'] and done['finished_at']
    assert done['last_error'].startswith('remote service unavailable')
    assert all((steps[name]['status'], steps[name]['attempt'],
                steps[name]['started_at']) == (models.STEP_WAITING, 0, None)
               for name in ('issue', 'poll', 'store', 'notify'))

    why = cluster.manage_json('order', 'explain', order_id)['why']
    lease = workflows.step_rows(database, order_id)[
        'check_caa'].lease_expires_at
    assert why == (
        'step check_domains waiting for a retry at %s (%s); step check_caa '
        'running on %s until its lease ends at %s; step issue waits for '
        'steps check_domains, check_caa' % (
            waiting['next_retry_at'][:19].replace('T', ' '), unavailable,
            worker_name, lease.isoformat(sep=' ', timespec='seconds'))), \
        why
