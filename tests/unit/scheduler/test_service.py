"""The timer's side of a pass: it runs ``run_once`` and waits what the
pass returns; a pass that raises is counted and logged, never fatal."""

import datetime

from scheduler import manager
from scheduler import metrics
from scheduler import service
from tests import config

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
