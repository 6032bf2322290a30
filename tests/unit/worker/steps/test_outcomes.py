"""What a workflow step's result decides, as write values, with no
database: ``worker.steps.outcomes``."""

import datetime
import types

from worker.db import models
from worker.order_types import base as types_base
from worker.order_types import fanout
from worker.plugins import base
from worker import policy
from worker.steps import outcomes
from worker.steps import runs
from worker.steps import writes
from worker import values

NOW = datetime.datetime(2026, 1, 1, 12, 0, 0)
ORDER = 'order-1'
FANOUT = types_base.check('fanout', fanout.FanoutOrder)


def _row(status, generation=0, output=None):
    return types.SimpleNamespace(status=status, generation=generation,
                                 output=output)


def _run(step, steps, token=1, **facts):
    return runs.Run(**dict(dict(
        order_id=ORDER, step=step, token=token, kind=None, failures=0,
        polls=0, started_at=NOW, last_error=None, order_created_at=NOW,
        order_meta={'cn': 'a'}, order_priority=3, workflow=FANOUT,
        policy=policy.StepPolicy(), steps=steps, claimed_at=NOW), **facts))


def _at(poll_status):
    """The steps of a fanout order whose ``poll`` is ``poll_status``."""
    steps = {name: _row(models.STEP_DONE, output={name: 1})
             for name in ('check_domains', 'check_caa', 'check_key',
                          'issue')}
    steps['poll'] = _row(poll_status)
    steps['store'] = _row(models.STEP_WAITING, generation=2)
    steps['notify'] = _row(models.STEP_WAITING, generation=5)
    return steps


def test_a_step_done_in_sequence_starts_the_next_ones_in_a_batch():
    run = _run('poll', _at(models.STEP_PENDING))

    decision = outcomes.decide(run, base.Completed({'serial': 'x'}), NOW)

    assert not outcomes.needs_order(run, base.Completed())
    assert decision.kind == runs.DONE
    assert decision.writes == (
        writes.FinishStep(ORDER, 'poll', 1, models.STEP_DONE,
                          output={'serial': 'x'}),
        writes.DeleteRetryRows(ORDER, 'poll'),
        writes.StartSteps(ORDER, ('store', 'notify'), True),
        writes.RecordRun.of(run, models.RUN_DONE))
    # Each with its order's type, which picks the topic it is cast to.
    assert decision.casts == (
        values.StepRef('store', ORDER, 2, None, 'fanout'),
        values.StepRef('notify', ORDER, 5, None, 'fanout'))
    assert writes.batched(decision.writes)


def test_a_step_done_with_a_delay_starts_the_next_ones_by_retry_rows():
    run = _run('poll', _at(models.STEP_PENDING))

    decision = outcomes.decide(
        run, base.Completed(then_after_seconds=60), NOW)

    later = NOW + datetime.timedelta(seconds=60)
    assert decision.casts == ()
    assert decision.writes[2:] == (
        writes.StartSteps(ORDER, ('store', 'notify'), False),
        writes.AddRetryRow(ORDER, 'store', 2, later, 0, 3),
        writes.AddRetryRow(ORDER, 'notify', 5, later, 0, 3),
        writes.RecordRun.of(run, models.RUN_DONE))


def test_the_last_parallel_step_is_decided_on_the_steps_read_under_lock():
    steps = _at(models.STEP_DONE)
    steps['store'] = _row(models.STEP_PENDING, generation=3)
    run = _run('notify', dict(steps, notify=_row(models.STEP_PENDING)))
    # Read under the order's lock: store ended meanwhile.
    read = dict(steps, store=_row(models.STEP_DONE, output={'stored': 1}),
                notify=_row(models.STEP_PENDING))

    assert outcomes.needs_order(run, base.Completed())
    as_claimed = outcomes.decide(run, base.Completed(), NOW)
    as_read = outcomes.decide(run, base.Completed({'sent': 1}), NOW, read)

    assert as_claimed.kind == runs.DONE
    assert as_read.kind == runs.ACTIVE
    [complete] = [write for write in as_read.writes
                  if isinstance(write, writes.CompleteOrder)]
    assert complete.meta == {'cn': 'a', 'check_domains': 1, 'check_caa': 1,
                             'check_key': 1, 'issue': 1, 'stored': 1,
                             'sent': 1}


def test_a_retry_replaces_its_steps_row():
    run = _run('poll', _at(models.STEP_PENDING))

    decision = outcomes.decide(run, base.RemoteUnavailable('down', 30), NOW)

    assert decision.kind == runs.RETRY
    retry, delete, add, _ = decision.writes
    assert retry == writes.RetryStep(ORDER, 'poll', 1, 1, 0,
                                     'remote service unavailable: down')
    assert delete == writes.DeleteRetryRows(ORDER, 'poll')
    assert (add.step, add.generation, add.retry_count, add.priority) == (
        'poll', 1, 1, 3)
    assert writes.batched(decision.writes)


def test_a_failed_order_is_written_one_at_a_time():
    run = _run('poll', _at(models.STEP_PENDING))

    decision = outcomes.decide(run, base.Failed('refused'), NOW)

    assert decision.kind == runs.ERROR
    assert [type(write) for write in decision.writes] == [
        writes.FinishStep, writes.FailOrder, writes.RevokeOpen,
        writes.DeleteRetryRows, writes.RecordRun]
    assert decision.writes[-2] == writes.DeleteRetryRows(ORDER)
    assert not writes.batched(decision.writes)


def test_a_subscribed_order_records_its_events_after_its_move():
    run = _run('poll', _at(models.STEP_PENDING), subscribed=True)

    decision = outcomes.decide(run, base.Failed('refused'), NOW)

    kinds = [type(write) for write in decision.writes]
    assert kinds.index(writes.RecordEvents) == kinds.index(
        writes.FailOrder) + 1
    [record] = [write for write in decision.writes
                if isinstance(write, writes.RecordEvents)]
    assert [event.event for event in record.events] == [
        'order.error', 'order.end']
    assert not writes.batched(decision.writes)


def _recorded(decision):
    """The decision's history row: its last write, and its only one."""
    recorded = [write for write in decision.writes
                if isinstance(write, writes.RecordRun)]
    assert recorded == [decision.writes[-1]]
    return recorded[0]


def _claimed(steps=None, **facts):
    """The third run of ``poll``, claimed by ``77@host`` with token 4."""
    return _run('poll', steps or _at(models.STEP_PENDING), token=4,
                attempt=3, worker='77@host', **facts)


def test_every_result_records_its_run_with_its_result_and_error():
    run = _claimed(failures=1,
                   policy=policy.StepPolicy(retry_on=('ValueError',)))
    cases = [
        (base.Completed(), runs.DONE, models.RUN_DONE, None),
        (base.RemoteUnavailable('down', 30), runs.RETRY, models.RUN_RETRY,
         'remote service unavailable: down'),
        (runs.StepError('ValueError: bad', ('ValueError', 'Exception')),
         runs.RETRY, models.RUN_RETRY, 'ValueError: bad'),
        (runs.StepError('KeyError: k', ('KeyError', 'Exception')),
         runs.ERROR, models.RUN_FAILED, 'KeyError: k'),
        (base.RetryLater(5), runs.RETRY, models.RUN_RETRY, None),
        (base.Failed('refused'), runs.ERROR, models.RUN_FAILED, 'refused'),
        (policy.GiveUp('gave up after 3 attempts; last error: x'),
         runs.ERROR, models.RUN_FAILED,
         'gave up after 3 attempts; last error: x'),
    ]
    for result, kind, recorded, error in cases:
        decision = outcomes.decide(run, result, NOW)

        assert decision.kind == kind, result
        assert _recorded(decision) == writes.RecordRun(
            ORDER, 'poll', 4, 3, '77@host', NOW, recorded, error), result


def test_the_last_step_and_a_compensation_record_their_runs_too():
    last = _claimed(_at(models.STEP_DONE) | {
        'store': _row(models.STEP_DONE), 'notify': _row(models.STEP_DONE),
        'poll': _row(models.STEP_PENDING)})
    compensation = _run('revoke', {}, token=2, attempt=1, worker='w')

    ended = outcomes.decide(last, base.Completed(), NOW)
    compensated = outcomes.decide(compensation, base.Completed(), NOW)
    failed = outcomes.decide(compensation, base.Failed('no'), NOW)

    assert ended.kind == runs.ACTIVE
    assert _recorded(ended).result == models.RUN_DONE
    assert (compensated.kind, _recorded(compensated).result) == (
        runs.CANCELLED, models.RUN_DONE)
    assert (failed.kind, _recorded(failed).result,
            _recorded(failed).error) == (runs.CANCELLED, models.RUN_FAILED,
                                         'no')


def test_a_policy_that_runs_out_records_a_failed_run():
    run = _claimed(failures=2, policy=policy.StepPolicy(max_attempts=3))

    decision = outcomes.decide(run, base.RemoteUnavailable('down'), NOW)

    assert decision.kind == runs.ERROR
    recorded = _recorded(decision)
    assert (recorded.result, recorded.attempt) == (models.RUN_FAILED, 3)
    assert 'down' in recorded.error
    assert not writes.batched(decision.writes)
