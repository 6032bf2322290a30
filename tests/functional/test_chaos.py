"""A small chaos run on PostgreSQL, as part of the suite.

The full runs (2,000 orders, 180 s of faults, each database) are made by
hand with ``python -m tests.chaos``; this one proves the tool and the
guarantees at a size CI can afford.
"""

import pytest

from tests.chaos import run
from tests.chaos import services as chaos_services


@pytest.mark.parametrize('backend', ['postgresql'])
def test_small_chaos_run_loses_nothing(tmp_path, backend, transport_url):
    services = chaos_services.Services(str(tmp_path))
    report = run.run(backend, 150, 40, str(tmp_path), services, seed=3,
                     recovery_timeout=120)
    print(report.line())
    assert report.kills >= 4
    assert report.broker_restarts == 1 and report.db_restarts == 1
    assert report.ok, report.line()
