"""The worker's step logic against the in-memory database: claim, run the
plugin, apply its answer, all fenced by the order's generation.

``tests/functional/test_worker_steps.py`` runs steps on the real
databases; these are the quick ones to run on every save.
"""

import datetime

import pytest

from tests import config
from worker.db import memory
from worker.db import models
from worker import manager
from worker.plugins import base

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)
OWNER = '1@worker-host'


class ScriptedPlugin(base.CertificatePluginBase):
    """Answers each call with the next of ``answers`` (an exception is
    raised); records the views it was given."""

    def __init__(self, *answers, during=None):
        self._answers = list(answers)
        self._during = during
        self.views = []

    def _answer(self, order):
        self.views.append(order)
        if self._during is not None:
            self._during(order)
        answer = self._answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    issue_certificate_request = check_certificate_status = _answer


@pytest.fixture
def database():
    return memory.InMemoryDatabase()


def _worker(database, plugin, **overrides):
    return manager.WorkerManager(config.make_conf(**overrides), database,
                                 lambda: plugin, OWNER, clock=lambda: NOW)


def _order(database, meta=None):
    with database.session() as session, session.begin():
        return database.repositories.orders.create(
            session, 'certificate', meta or {}, NOW).id


def _state(database, order_id):
    with database.reader() as session, session.begin():
        repos = database.repositories
        return (repos.orders.get(session, order_id),
                repos.retry_tasks.list_tasks(session, order_id=order_id))


def test_completed_makes_the_order_active_and_merges_its_meta(database):
    order_id = _order(database, {'domain': 'example.org'})
    plugin = ScriptedPlugin(base.Completed(meta={'certificate': 'pem'}))

    _worker(database, plugin).process_type_order({}, order_id, 0)

    order, retries = _state(database, order_id)
    assert order.status == models.ACTIVE and retries == []
    assert order.meta == {'domain': 'example.org', 'certificate': 'pem'}
    assert order.owner is None and order.generation == 1
    # The plugin saw the order under its new token, read-only.
    [view] = plugin.views
    assert view.token == 1 and view.meta['domain'] == 'example.org'
    with pytest.raises(TypeError):
        view.meta['domain'] = 'other'


def test_a_stale_or_duplicate_message_runs_nothing(database):
    order_id = _order(database)
    plugin = ScriptedPlugin(base.RetryLater(5, 'check_certificate_status'))
    worker = _worker(database, plugin)
    worker.process_type_order({}, order_id, 0)
    before = _state(database, order_id)

    worker.process_type_order({}, order_id, 0)          # duplicate
    worker.check_certificate_status({}, order_id, 0)    # stale token
    worker.check_certificate_status({}, order_id, 7)    # future token
    worker.process_type_order({}, order_id, 1)          # wrong step
    worker.check_certificate_status({}, 'no-such-order', 1)

    assert len(plugin.views) == 1
    assert _state(database, order_id) == before


def test_retry_later_writes_one_row_with_the_new_token(database):
    order_id = _order(database)
    plugin = ScriptedPlugin(base.RetryLater(5, 'check_certificate_status'))

    _worker(database, plugin).process_type_order({}, order_id, 0)

    order, [retry] = _state(database, order_id)
    assert (order.status, order.step, order.generation, order.owner) == (
        models.PENDING, 'check_certificate_status', 1, None)
    assert retry.retry_task == 'check_certificate_status'
    assert retry.retry_at == NOW + datetime.timedelta(seconds=5)
    assert retry.retry_kwargs == '{"generation": 1}'


def test_an_unavailable_remote_backs_off_then_fails_the_order(database):
    order_id = _order(database)
    unavailable = base.RemoteUnavailable('CA down')
    plugin = ScriptedPlugin(unavailable, unavailable, unavailable)
    worker = _worker(database, plugin,
                     **{'worker.max_unavailable_retries': 2,
                        'worker.unavailable_backoff_base_seconds': 2.0,
                        'worker.unavailable_backoff_max_seconds': 600.0})

    delays = []
    for generation in (0, 1):
        worker.process_type_order({}, order_id, generation)
        order, [retry] = _state(database, order_id)
        assert order.attempt == generation + 1
        delays.append((retry.retry_at - NOW).total_seconds())
    worker.process_type_order({}, order_id, 2)

    order, retries = _state(database, order_id)
    assert order.status == models.ERROR and retries == []
    assert 'unavailable after 2 retries: CA down' in order.error_reason
    # Exponential with equal jitter: half fixed, half random, capped.
    assert 1 <= delays[0] <= 2 and 2 <= delays[1] <= 4


def test_a_plugin_that_raises_fails_its_order(database):
    order_id = _order(database)
    plugin = ScriptedPlugin(RuntimeError('boom'))

    _worker(database, plugin).process_type_order({}, order_id, 0)

    order, _ = _state(database, order_id)
    assert order.status == models.ERROR
    assert order.error_reason == 'plugin error in process_type_order: boom'


def test_a_result_overtaken_while_the_step_ran_is_discarded(database):
    order_id = _order(database)

    def taken_back(view):
        # The scheduler takes the order back while the plugin runs.
        with database.session() as session, session.begin():
            assert database.repositories.orders.take_back(
                session, order_id, view.token, NOW)
    plugin = ScriptedPlugin(base.Completed(), during=taken_back)

    _worker(database, plugin).process_type_order({}, order_id, 0)

    order, retries = _state(database, order_id)
    assert (order.status, order.generation) == (models.PENDING, 2)
    assert retries == []


def test_run_steps_drops_malformed_and_stale_steps_and_runs_the_rest(
        database):
    current, stale = _order(database), _order(database)
    plugin = ScriptedPlugin(base.Completed())
    worker = _worker(database, plugin)

    worker.run_steps({}, [
        ['process_type_order', current, 0],
        ['process_type_order', stale, 5],
        ['format_hard_disk', current, 0],
        ['process_type_order', current, True],
        ['process_type_order'],
        'garbage',
    ])

    assert [view.id for view in plugin.views] == [current]
    assert _state(database, current)[0].status == models.ACTIVE
    assert _state(database, stale)[0].generation == 0


def test_a_result_the_database_refused_is_written_once_it_answers(
        database):
    order_id = _order(database)
    worker = _worker(database, ScriptedPlugin(base.Completed()))
    session = database.session
    refusing = []

    def down_after_the_claim():
        # The claim's session goes through; the apply's finds the
        # database gone.
        if refusing:
            raise RuntimeError('database gone')
        refusing.append(True)
        return session()
    database.session = down_after_the_claim

    worker.process_type_order({}, order_id, 0)

    order, _ = _state(database, order_id)
    assert (order.status, order.owner) == (models.PENDING, OWNER)
    worker.apply_deferred_results()          # still down: kept
    database.session = session
    worker.apply_deferred_results()
    order, _ = _state(database, order_id)
    assert (order.status, order.owner) == (models.ACTIVE, None)
    worker.apply_deferred_results()          # written once only
    assert _state(database, order_id)[0].status == models.ACTIVE
