"""``order explain``: one sentence on why a PENDING order has not moved.

The tests read from ``FakeDatabase``: the four repository functions
``explain_order`` calls, over rows the test writes directly, so that each
test states exactly the rows it explains (a lease in the past, a parked
row) without driving a workflow there.
"""

import contextlib
import dataclasses
import datetime
import re

import pytest

from scheduler.manage import explain
from tests import config
from worker.db import models
from worker.db import pauses
from worker import order_types

NOW = datetime.datetime(2026, 3, 1, 12, 0, 0)
ORDER_ID = 'o-1'
WORKER = 'w-1@host-a'
DEAD_WORKER = 'w-9@host-b'
DAEMON = 'retry-1@host-c'


@dataclasses.dataclass
class Order:
    id: str = ORDER_ID
    type: str = 'fanout'
    status: str = models.PENDING
    error_reason: str | None = None
    not_before: datetime.datetime | None = None
    workflow_version: str | None = None


@dataclasses.dataclass
class StepRow:
    status: str = models.STEP_WAITING
    owner: str | None = None
    lease_expires_at: datetime.datetime | None = None
    dispatched_at: datetime.datetime | None = None
    last_error: str | None = None
    attempt: int = 0


@dataclasses.dataclass
class RetryRow:
    id: int
    order_id: str
    retry_task: str
    retry_at: datetime.datetime
    parked: bool = False
    park_reason: str | None = None
    waiting_for: str | None = None


@dataclasses.dataclass
class ServiceRow:
    kind: str
    heartbeat_at: datetime.datetime


class _Orders:
    def __init__(self, db):
        self._db = db

    def get(self, session, order_id):
        return self._db.orders.get(order_id)


class _Steps:
    def __init__(self, db):
        self._db = db

    def for_order(self, session, order_id):
        return dict(self._db.steps.get(order_id, {}))


class _RetryTasks:
    def __init__(self, db):
        self._db = db

    def list_tasks(self, session, parked=None, order_id=None):
        return sorted((row for row in self._db.retries
                       if order_id in (None, row.order_id)),
                      key=lambda row: (row.retry_at, row.id))


class _Services:
    def __init__(self, db):
        self._db = db

    def live_names(self, session, alive_since, kind=None):
        return {name for name, row in self._db.services.items()
                if row.heartbeat_at >= alive_since and
                kind in (None, row.kind)}


class _Pauses:
    def __init__(self, db):
        self._db = db

    def matching(self, session, order_ids):
        return [pause for pause in self._db.pauses
                if pause.target != 'order' or pause.name in order_ids]


class _Session:
    def begin(self):
        return contextlib.nullcontext()


class FakeDatabase:
    """The read side ``explain_order`` uses, over plain rows."""

    def __init__(self):
        self.orders = {}
        self.steps = {}
        self.retries = []
        self.services = {}
        self.pauses = []
        self.repositories = type('Repositories', (), {})()
        self.repositories.orders = _Orders(self)
        self.repositories.steps = _Steps(self)
        self.repositories.retry_tasks = _RetryTasks(self)
        self.repositories.services = _Services(self)
        self.repositories.pauses = _Pauses(self)

    @contextlib.contextmanager
    def reader(self):
        yield _Session()

    def add_order(self, order, **steps):
        self.orders[order.id] = order
        self.steps[order.id] = steps

    def beat(self, name, kind, seconds_ago=0):
        self.services[name] = ServiceRow(
            kind, NOW - datetime.timedelta(seconds=seconds_ago))


@pytest.fixture
def conf():
    return config.make_conf()


@pytest.fixture
def db():
    database = FakeDatabase()
    database.beat(WORKER, models.WORKER)
    database.beat(DAEMON, models.SCHEDULER)
    return database


def _at(seconds):
    return NOW + datetime.timedelta(seconds=seconds)


def _text(moment):
    return moment.isoformat(sep=' ', timespec='seconds')


def _explain(db, conf, now=NOW):
    return explain.explain_order(db, conf, ORDER_ID, now)


def _fanout(db, status=models.PENDING, error_reason=None, **steps):
    """An order of the fanout type: its checks first, the rest WAITING."""
    rows = {name: StepRow() for name in (
        'check_domains', 'check_caa', 'check_key', 'issue', 'poll', 'store',
        'notify')}
    rows.update(steps)
    db.add_order(Order(status=status, error_reason=error_reason), **rows)


def test_a_step_running_on_a_live_owner_until_its_lease_ends(db, conf):
    lease_end = _at(300)
    _fanout(db, check_key=StepRow(models.STEP_PENDING, owner=WORKER,
                                  lease_expires_at=lease_end))
    why = _explain(db, conf)
    assert why.status == models.PENDING
    assert 'check_key' in why.sentence
    assert 'running on %s' % WORKER in why.sentence
    assert 'lease ends at %s' % _text(lease_end) in why.sentence


def test_a_step_on_an_owner_that_stopped_heartbeating(db, conf):
    # One second past service_down_time: dead by the daemon's own rule.
    db.beat(DEAD_WORKER, models.WORKER,
            seconds_ago=conf.service_down_time + 1)
    _fanout(db, check_key=StepRow(models.STEP_PENDING, owner=DEAD_WORKER,
                                  lease_expires_at=_at(300)))
    sentence = _explain(db, conf).sentence
    assert DEAD_WORKER in sentence
    assert 'stopped heartbeating' in sentence
    assert 'lease ends' not in sentence


def test_an_owner_heartbeating_at_the_cutoff_is_still_alive(db, conf):
    db.beat(DEAD_WORKER, models.WORKER, seconds_ago=conf.service_down_time)
    _fanout(db, check_key=StepRow(models.STEP_PENDING, owner=DEAD_WORKER))
    sentence = _explain(db, conf).sentence
    assert 'running on %s' % DEAD_WORKER in sentence
    assert 'stopped heartbeating' not in sentence


def test_an_owner_never_seen_is_dead(db, conf):
    _fanout(db, check_key=StepRow(models.STEP_PENDING, owner='ghost@x'))
    assert 'ghost@x, which stopped heartbeating' in \
        _explain(db, conf).sentence


def test_a_step_waiting_for_a_retry_says_when_and_why(db, conf):
    retry_at = _at(45)
    _fanout(db, check_caa=StepRow(models.STEP_PENDING,
                                  last_error='DNS server unavailable'))
    db.retries.append(RetryRow(7, ORDER_ID, 'check_caa', retry_at))
    sentence = _explain(db, conf).sentence
    assert 'check_caa' in sentence
    assert 'retry at %s' % _text(retry_at) in sentence
    assert 'DNS server unavailable' in sentence


def test_a_step_waiting_for_a_resource_slot_names_its_key(db, conf):
    _fanout(db, check_caa=StepRow(models.STEP_PENDING))
    db.retries.append(RetryRow(7, ORDER_ID, 'check_caa', _at(30),
                               waiting_for='ca:letsencrypt'))
    sentence = _explain(db, conf).sentence
    assert 'waits for a free slot of resource ca:letsencrypt' in sentence
    assert _text(_at(30)) in sentence


def test_a_step_held_by_a_pause_names_it_and_the_order_is_paused(db, conf):
    _fanout(db, check_caa=StepRow(models.STEP_PENDING))
    db.pauses.append(pauses.Pause(4, 'order_type', 'fanout', 'CA down',
                                  None, _at(-60)))
    db.retries.append(RetryRow(7, ORDER_ID, 'check_caa', _at(60),
                               waiting_for=pauses.waiting_key(4)))
    sentence = _explain(db, conf).sentence
    assert sentence.startswith('paused (order_type fanout since %s: CA '
                               'down)' % _text(_at(-60)))
    assert 'check_caa is held by the pause of order_type fanout' in sentence
    assert 'checked again at %s' % _text(_at(60)) in sentence


def test_a_pause_of_another_order_or_type_does_not_hold_it(db, conf):
    _fanout(db, check_caa=StepRow(models.STEP_PENDING))
    db.pauses.extend([
        pauses.Pause(4, 'order_type', 'certificate', None, None, NOW),
        pauses.Pause(5, 'order', 'another-order', None, None, NOW)])
    assert 'paused' not in _explain(db, conf).sentence


def test_a_poll_waiting_for_its_retry_says_polling(db, conf):
    _fanout(db, poll=StepRow(models.STEP_PENDING, attempt=2))
    db.retries.append(RetryRow(7, ORDER_ID, 'poll', _at(10)))
    assert 'polling' in _explain(db, conf).sentence


def test_a_step_not_run_yet_waits_for_its_first_run(db, conf):
    _fanout(db, poll=StepRow(models.STEP_PENDING))
    db.retries.append(RetryRow(7, ORDER_ID, 'poll', _at(10)))
    assert 'its first run' in _explain(db, conf).sentence


def test_a_parked_retry_row_names_its_id_and_reason(db, conf):
    _fanout(db, check_caa=StepRow(models.STEP_PENDING))
    db.retries.append(RetryRow(
        42, ORDER_ID, 'check_caa', _at(-60), parked=True,
        park_reason='retry_kwargs is not valid JSON'))
    sentence = _explain(db, conf).sentence
    assert 'parked retry row (42)' in sentence
    assert 'retry_kwargs is not valid JSON' in sentence


def test_a_due_retry_is_cast_by_the_next_pass(db, conf):
    _fanout(db, check_caa=StepRow(models.STEP_PENDING))
    db.retries.append(RetryRow(7, ORDER_ID, 'check_caa', _at(-5)))
    assert 'next pass casts it' in _explain(db, conf).sentence


def test_a_due_retry_with_no_live_daemon_says_so(db, conf):
    db.beat(DAEMON, models.SCHEDULER, seconds_ago=conf.service_down_time + 1)
    due = _at(-5)
    _fanout(db, check_caa=StepRow(models.STEP_PENDING))
    db.retries.append(RetryRow(7, ORDER_ID, 'check_caa', due))
    sentence = _explain(db, conf).sentence
    assert 'due since %s' % _text(due) in sentence
    assert 'no barbican-retry daemon is alive' in sentence


def test_a_lost_dispatch(db, conf):
    cast_at = _at(-conf.scheduler.dispatch_deadline_seconds - 1)
    _fanout(db, check_key=StepRow(models.STEP_PENDING, dispatched_at=cast_at))
    sentence = _explain(db, conf).sentence
    assert 'cast at %s' % _text(cast_at) in sentence
    assert 'lost dispatch' in sentence


def test_a_recent_dispatch_waits_for_a_worker_until_its_deadline(db, conf):
    cast_at = _at(-1)
    taken_back = cast_at + datetime.timedelta(
        seconds=conf.scheduler.dispatch_deadline_seconds)
    _fanout(db, check_key=StepRow(models.STEP_PENDING, dispatched_at=cast_at))
    sentence = _explain(db, conf).sentence
    assert 'waiting for a worker' in sentence
    assert _text(taken_back) in sentence
    assert 'lost dispatch' not in sentence


def test_a_dispatch_to_a_types_own_topic_names_it(db):
    conf = config.make_conf(**{'order_type:fanout.topic': 'slow'})
    cast_at = _at(-conf.scheduler.dispatch_deadline_seconds - 1)
    _fanout(db, check_key=StepRow(models.STEP_PENDING, dispatched_at=cast_at),
            **{'notify:1': StepRow(models.STEP_PENDING,
                                   dispatched_at=cast_at)})
    sentence = _explain(db, conf).sentence
    # Its delivery went to [worker] topic.
    assert sentence.startswith(
        'step check_key cast to topic slow (served by barbican-worker '
        '--topic slow) at %s and not taken up by any worker' % _text(cast_at))
    assert 'step notify:1 cast at %s' % _text(cast_at) in sentence


def test_steps_waiting_for_predecessors_name_the_ones_not_done(db, conf):
    done = StepRow(models.STEP_DONE)
    _fanout(db, check_domains=done, check_key=done,
            check_caa=StepRow(models.STEP_PENDING, owner=WORKER))
    sentence = _explain(db, conf).sentence
    assert re.search(r'issue waits for (steps? )?check_caa\b', sentence)
    waiting_part = sentence[sentence.index('issue waits'):]
    assert 'check_domains' not in waiting_part
    assert 'check_key' not in waiting_part
    # poll, store and notify wait for a WAITING step: issue says it all.
    assert 'poll' not in sentence
    assert 'notify' not in sentence


def test_every_pending_step_is_explained(db, conf):
    _fanout(db,
            check_domains=StepRow(models.STEP_PENDING, owner=WORKER),
            check_caa=StepRow(models.STEP_PENDING, owner='ghost@x'),
            check_key=StepRow(models.STEP_PENDING, owner=WORKER))
    sentence = _explain(db, conf).sentence
    for name in ('check_domains', 'check_caa', 'check_key', 'ghost@x'):
        assert name in sentence


@pytest.mark.parametrize('status,error_reason,expected', [
    (models.ACTIVE, None, 'ACTIVE: every step is done'),
    (models.ERROR, 'issue: gave up after 8 attempts; last error: CA down',
     'ERROR: issue: gave up after 8 attempts; last error: CA down (once '
     'the cause is fixed, `order resume ID` runs its steps that did not '
     'finish again)'),
    (models.CANCELLED, 'cancelled by admin',
     'CANCELLED: cancelled by admin'),
])
def test_terminal_orders_say_how_they_ended(db, conf, status, error_reason,
                                            expected):
    done = StepRow(models.STEP_DONE)
    _fanout(db, status=status, error_reason=error_reason,
            check_domains=done)
    assert _explain(db, conf) == explain.Why(
        status, expected.replace('ID', ORDER_ID))


def test_an_order_of_an_uninstalled_type_names_the_installed_ones(db, conf):
    db.add_order(Order(type='renewal'),
                 issue=StepRow(models.STEP_PENDING, owner=WORKER))
    sentence = _explain(db, conf).sentence
    assert sentence.startswith('cannot explain it here')
    assert "'renewal'" in sentence and 'fanout' in sentence


def test_an_order_with_nothing_pending_lists_its_steps(db, conf):
    _fanout(db, check_domains=StepRow(models.STEP_DONE))
    sentence = _explain(db, conf).sentence
    assert 'no step is running or due' in sentence
    assert 'check_domains DONE' in sentence
    assert 'issue WAITING' in sentence


def test_an_unknown_order_is_a_lookup_error(db, conf):
    with pytest.raises(LookupError, match=ORDER_ID):
        _explain(db, conf)


def test_an_order_created_to_start_later_says_when_it_starts(db, conf):
    start = _at(3600)
    db.add_order(Order(type='certificate', not_before=start),
                 process_type_order=StepRow(models.STEP_PENDING),
                 check_certificate_status=StepRow())
    db.retries.append(RetryRow(1, ORDER_ID, 'process_type_order', start))
    sentence = _explain(db, conf).sentence
    assert sentence.startswith(
        'created to start later: it starts at %s (not_before), in 1:00:00; '
        % _text(start))
    assert 'step process_type_order waiting for a retry at %s (its first ' \
        'run)' % _text(start) in sentence
    # Once started, it is explained as any other.
    assert 'start later' not in _explain(db, conf, now=_at(3601)).sentence


def test_a_step_that_waits_for_a_signal_names_it(db, conf):
    db.add_order(Order(type='certificate'),
                 process_type_order=StepRow(models.STEP_DONE),
                 check_certificate_status=StepRow(models.STEP_PENDING))
    db.retries.append(RetryRow(1, ORDER_ID, 'check_certificate_status',
                               _at(3600)))
    sentence = _explain(db, conf).sentence
    assert sentence.endswith(
        ', or at once when a signal certificate.issued comes (order signal '
        '%s certificate.issued)' % ORDER_ID)


def test_an_order_of_a_graph_its_type_does_not_declare_names_its_version(
        db, conf):
    _fanout(db)
    db.orders[ORDER_ID].workflow_version = '0123456789abcdef'
    why = _explain(db, conf)
    assert why.version == '0123456789abcdef'
    assert why.sentence.startswith(
        'no worker of this release runs it: order type fanout does not '
        'declare workflow version 0123456789abcdef (it declares ')
    assert 'previous_workflows' in why.sentence


def test_an_order_explained_names_the_version_of_its_graph(db, conf):
    _fanout(db, check_key=StepRow(models.STEP_PENDING, owner=WORKER,
                                  lease_expires_at=_at(300)))
    # Created before versions were recorded: its rows are the graph.
    assert _explain(db, conf).version == order_types.get('fanout').version
