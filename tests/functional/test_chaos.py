"""Small chaos runs on PostgreSQL, as part of the suite.

The full runs (2,000 orders, 180 s of faults, each database and order
type) are made by hand with ``python -m tests.chaos``; these prove the
tool and the guarantees at a size CI can afford: the certificate type,
and the fan-out type (steps in parallel, one idempotency key per step).
"""

import pytest

from tests.chaos import run
from tests.chaos import services as chaos_services


@pytest.mark.parametrize('order_type, orders, duration', [
    ('certificate', 150, 40),
    ('fanout', 100, 30),
])
@pytest.mark.parametrize('backend', ['postgresql'])
def test_small_chaos_run_loses_nothing(tmp_path, backend, transport_url,
                                       order_type, orders, duration):
    services = chaos_services.Services(str(tmp_path))
    report = run.run(backend, orders, duration, str(tmp_path), services,
                     seed=3, recovery_timeout=120, order_type=order_type)
    print(report.line())
    assert report.kills >= 4
    assert report.broker_restarts == 1 and report.db_restarts == 1
    if order_type == 'fanout':
        steps, several, shared = report.keys
        assert steps >= 3 * orders and not several and not shared
    assert report.ok, report.line()
