"""The burst benchmark's quick variant (issue 29, item 5) in the suite.

5,000 single-step orders cast at once, one message each, to 2 worker
processes with the default ``[worker] max_queued_steps``, no retry
daemon: every order ends ACTIVE, none lost. Its speed and memory are the
benchmark's to report (``python -m tests.benchmarks --only burst``), not
asserted here: the machine is shared.
"""

import pytest

from tests.benchmarks import burst
from tests.benchmarks import env


@pytest.mark.parametrize('backend', ['postgresql'])
def test_the_quick_burst_loses_no_order(database_url, database,
                                        transport_url, tmp_path):
    try:
        figures = burst.measure_on(database_url, database, transport_url,
                                   tmp_path, burst.QUICK_ORDERS,
                                   lambda *args: None)
    finally:
        env.cleanup_transports()
    assert (figures['active'], figures['lost']) == (burst.QUICK_ORDERS, 0)
    assert figures['dropped_lines'] == 0
