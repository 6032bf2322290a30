"""Small chaos runs on each database, as part of the suite.

The full runs (2,000 orders, 180 s of faults, each database and order
type) are made by hand with ``python -m tests.chaos``; these prove the
tool and the guarantees at a size CI can afford, one run per database:
the certificate type on MariaDB and SQLite, the fan-out type (steps in
parallel, one idempotency key per step) on PostgreSQL and quorum queues.
Each run restarts the broker, kills it with SIGKILL, restarts the
database server (not SQLite's), and takes down the receiver of the
orders' notifications for a while: the events of every order of every
other wave (those with a callback URL) must reach it, first seen in
sequence, and none of the others'. A few poison orders kill their own
worker on every run: they end ERROR, the pool serves on.
"""

import pytest

from tests.chaos import run
from tests.chaos import services as chaos_services

# Each run restarts and kills the broker and the database server.
pytestmark = pytest.mark.exclusive


# One run per database, each under 2 minutes, to keep CI well under its
# budget: PostgreSQL's runs the fan-out type, on quorum queues.
@pytest.mark.parametrize('backend, order_type, orders, duration, queues', [
    ('mysql', 'certificate', 120, 30, 'classic'),
    ('sqlite', 'certificate', 100, 30, 'classic'),
    ('postgresql', 'fanout', 100, 30, 'quorum'),
])
def test_small_chaos_run_loses_nothing(tmp_path, backend, transport_url,
                                       order_type, orders, duration,
                                       queues):
    services = chaos_services.Services(str(tmp_path))
    report = run.run(backend, orders, duration, str(tmp_path), services,
                     seed=3, recovery_timeout=120, order_type=order_type,
                     queues=queues)
    print(report.line())
    assert report.kills >= 4
    assert report.broker_restarts == 1 and report.broker_kills == 1
    assert report.hung_calls >= 1 and report.skewed_clocks == 2
    assert report.db_restarts == (0 if backend == 'sqlite' else 1)
    # Orders with a callback URL and orders without, both.
    assert 0 < report.subscribed < orders
    # Three events at least per subscribed order (created, its final
    # status, end); none of the others (checked as event gaps).
    assert report.receiver_outages == 1
    assert report.events >= 3 * report.subscribed
    assert report.event_gaps == 0
    # Poison orders ended ERROR after [worker] max_step_crashes deaths of
    # their workers, and every other order ended as it should.
    assert report.poison >= 1 and report.poison_uncontained == 0
    if order_type == 'fanout':
        steps, several, shared = report.keys
        assert steps >= 3 * orders and not several and not shared
    assert report.ok, report.line()
