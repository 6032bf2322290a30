"""The timer's side of a pass: it runs ``run_once`` and waits what the
pass returns; a pass that raises is counted and logged, never fatal."""

import datetime
import logging

from scheduler import manager
from scheduler import metrics
from scheduler import service
from tests import config
from worker.db import memory

NOW = datetime.datetime(2026, 11, 22, 12, 0, 0)


class StubManager:
    """Returns ``result`` from each pass (raises it, if an exception)."""

    def __init__(self, result):
        self.result = result
        self.passes = []

    def run_once(self, now):
        self.passes.append(now)
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


def _service(result):
    conf = config.make_conf(**{'scheduler.schedule_period_seconds': 15})
    svc = service.SchedulerService(conf, clock=lambda: NOW)
    # What start() builds, without a database or a broker.
    svc._manager = StubManager(result)
    svc._metrics = metrics.SchedulerMetrics()
    return svc


def _sample(svc, name, **labels):
    return svc._metrics.registry.get_sample_value(name, labels) or 0


def test_the_timer_waits_what_the_pass_planned():
    result = manager.PassResult(locked=True, dispatched=3, duration=0.2,
                                next_pass_in=4.5, backlog=7)
    svc = _service(result)

    assert svc.run_pass_now() == 4.5
    assert svc._manager.passes == [NOW]
    assert _sample(svc, 'barbican_retry_passes_total', outcome='ran') == 1
    assert _sample(svc, 'barbican_retry_rows_dispatched_total') == 3
    assert _sample(svc, 'barbican_retry_due_backlog') == 7


def test_a_pass_that_raises_is_counted_and_the_timer_goes_on(caplog):
    svc = _service(RuntimeError('database gone'))

    assert svc.run_pass_now() == 15
    assert _sample(svc, 'barbican_retry_passes_total',
                   outcome='failed') == 1
    assert 'Retry pass failed' in caplog.text
    assert 'database gone' in caplog.text


def test_a_stopping_service_runs_no_more_passes():
    svc = _service(manager.PassResult(idle=True, next_pass_in=1.0))
    svc._stopping.set()

    assert svc.run_pass_now() == 15
    assert svc._manager.passes == []


def test_every_pass_outcome_is_exported_from_the_start():
    svc = _service(manager.PassResult(idle=True))
    sample = svc._metrics.registry.get_sample_value
    # None (not 0) for a series not exported.
    assert [sample('barbican_retry_passes_total', {'outcome': outcome})
            for outcome in metrics.PASS_OUTCOMES] == [0.0] * 4


def test_the_last_pass_moves_on_passes_that_ran_or_were_idle_only():
    svc = _service(manager.PassResult(locked=False, idle=False))
    svc._metrics.last_pass.set(1)
    svc.run_pass_now()     # skipped: another daemon held the lock
    assert _sample(svc, 'barbican_retry_last_pass_timestamp_seconds') == 1

    svc._manager.result = manager.PassResult(idle=True)
    svc.run_pass_now()
    assert _sample(svc, 'barbican_retry_last_pass_timestamp_seconds') > \
        NOW.timestamp() - 1


class _DatabaseAway:
    repositories = None

    def reader(self):
        raise RuntimeError('database gone')


def test_a_census_that_fails_is_logged_once_until_it_is_read_again(caplog):
    caplog.set_level(logging.INFO)
    svc = _service(manager.PassResult(idle=True))
    svc._database = _DatabaseAway()
    svc._take_census()
    svc._take_census()
    assert caplog.text.count('Could not read the census') == 1
    assert svc._metrics.registry.get_sample_value(
        'barbican_retry_parked_rows') == 0

    svc._database = memory.InMemoryDatabase()
    svc._take_census()
    assert 'Census for the metrics read again' in caplog.text
    assert _sample(svc, 'barbican_retry_services_alive',
                   kind='worker') == 0
    assert svc._metrics.registry.get_sample_value(
        'barbican_retry_unfinished_orders', {'status': 'PENDING'}) == 0.0
