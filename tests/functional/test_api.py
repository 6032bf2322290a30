"""``worker.api`` on every database: what a service builds on.

Racing creators with one idempotency key (16 processes), project
isolation, paging and a refused request that wrote nothing; and the
example of doc/api.md, run as printed against a live deployment.
"""

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap
import time

import pytest
import sqlalchemy as sa

from tests import config
from tests.functional import processes
from worker import api
from worker.db import models
from worker.db import session as db_session

ROOT = pathlib.Path(processes.REPO_ROOT)
RACERS = 16

# One creator: waits for the common start moment, creates, prints the id.
_RACER = textwrap.dedent('''
    import logging, sys, time
    from oslo_config import cfg
    from worker import api
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    conf = cfg.ConfigOpts()
    conf(['--config-file', sys.argv[1]], project='barbican-retry')
    orders = api.OrderAPI.from_config(conf)
    orders.now()
    time.sleep(max(0.0, float(sys.argv[2]) - time.time()))
    started = time.monotonic()
    order = orders.create('certificate', {'unavailable_attempts': 0},
                          project_id='racers', idempotency_key='one-key')
    print(order.id, time.monotonic() - started)
    orders.close()
''')


def _rows(database, model):
    with database.session() as session:
        return session.execute(sa.select(sa.func.count()).select_from(
            model)).scalar()


def test_racing_creators_with_one_key_make_one_order(deployment, database):
    cluster = deployment({})
    start_at = time.time() + 8
    # On a Galera cluster (BARBICAN_RETRY_TEST_GALERA=1), each racer
    # writes through a node of its own turn: the loser's write set is
    # refused at COMMIT instead of by the index.
    configs = ([cluster.node_config(number % len(cluster.nodes))
                for number in range(RACERS)] if cluster.nodes
               else [cluster.config] * RACERS)
    racers = [subprocess.Popen(
        [sys.executable, '-c', _RACER, config, str(start_at)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=str(ROOT), env=dict(os.environ, **cluster.env))
        for config in configs]
    results = [racer.communicate(timeout=120) for racer in racers]
    for racer, (out, err) in zip(racers, results):
        assert racer.returncode == 0, err
    ids = {out.split()[0] for out, _ in results}
    seconds = sorted(float(out.split()[1]) for out, _ in results)
    lost = sum('a concurrent request created order' in err
               for _, err in results)
    # The figures of the closing note: how many lost the race at the
    # index (the others found the order at their first read).
    print('%d creators, one key: %d order(s); %d lost the race at the '
          'unique index; create took %.3f s median, %.3f s max'
          % (RACERS, len(ids), lost, seconds[len(seconds) // 2],
             seconds[-1]))
    assert len(ids) == 1
    assert _rows(database, models.Order) == 1


@pytest.fixture
def orders(database):
    """The API on a real database, without an RPC client: the first
    steps are left to a retry daemon (none runs here)."""
    return api.OrderAPI(database, config.make_conf(**{
        'notifications.allowed_hosts': ['hooks.example.org'],
        'notifications.secret': 'x'}))


def test_a_project_sees_only_its_orders_a_page_at_a_time(orders):
    mine = [orders.create('certificate', {}, project_id='mine').id
            for _ in range(5)]
    theirs = orders.create('fanout', {}, project_id='theirs')
    first = orders.list(project_id='mine', limit=2)
    pages = [first]
    while len(pages[-1]) == 2:
        pages.append(orders.list(project_id='mine', limit=2,
                                 marker=pages[-1][-1].id))
    assert [order.id for page in pages for order in page] == mine
    with pytest.raises(api.OrderNotFound):
        orders.get(theirs.id, project_id='mine')
    with pytest.raises(api.OrderNotFound):
        orders.cancel(theirs.id, project_id='mine')
    with pytest.raises(api.OrderNotFound):
        orders.find(theirs.id[:8], project_id='mine')
    assert orders.find(theirs.id[:8],
                       all_projects=True).project_id == 'theirs'
    # The fan-out type has a compensation step, which runs first.
    assert orders.cancel(theirs.id, project_id='theirs').status == \
        api.CANCELLING
    assert [order.id for order in orders.list(
        project_id='theirs', order_type='fanout')] == [theirs.id]


def test_a_refused_request_writes_nothing(orders, database):
    with pytest.raises(api.InvalidMeta) as raised:
        orders.create('fanout', {'polls': 'many'}, project_id='p',
                      callback_urls=['https://hooks.example.org/x'])
    assert (raised.value.path, raised.value.rule) == ('$.polls', 'type')
    with pytest.raises(api.URLNotAllowed):
        orders.create('fanout', {}, project_id='p',
                      callback_urls=['https://elsewhere.example.com/'])
    first = orders.create('certificate', {}, project_id='p',
                          idempotency_key='k')
    with pytest.raises(api.IdempotencyConflict):
        orders.create('certificate', {'unavailable_attempts': 1},
                      project_id='p', idempotency_key='k')
    assert _rows(database, models.Order) == 1
    assert _rows(database, models.OrderStep) == len(first.steps)
    assert _rows(database, models.NotificationEvent) == 0


_PYTHON_BLOCK = re.compile(r'^```python\n(.*?)^```', re.M | re.S)
_INI_BLOCK = re.compile(r'^```ini\n(.*?)^```', re.M | re.S)
_SERVE_LINE = 'with local.serve(orders, upgrade_database=True):\n'


def _guide():
    """The first example of doc/api.md: its configuration and its code."""
    text = (ROOT / 'doc' / 'api.md').read_text()
    return _INI_BLOCK.findall(text)[0], _PYTHON_BLOCK.findall(text)[0]


def _run_example(directory, config, example, env=None):
    """Run ``example`` in ``directory`` beside ``barbican-retry.conf``;
    return its output lines."""
    (directory / 'barbican-retry.conf').write_text(config)
    (directory / 'example.py').write_text(example)
    done = subprocess.run([sys.executable, 'example.py'], cwd=directory,
                          capture_output=True, text=True, timeout=300,
                          env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    # A cast that fails is logged, and the order then waits for the
    # retry daemon's dispatch deadline (300 s by default).
    assert 'could not be cast' not in done.stderr, done.stderr[-3000:]
    return done.stdout.splitlines()


def _check_output(lines):
    """The example's printed lines; returns its order's id and request
    id."""
    order_id, status, request_id = lines[0].split()
    assert status == api.PENDING and request_id.startswith('req-')
    assert lines[1].startswith('refused: idempotency key')
    assert lines[2] == 'refused: $.unavailable_attempts type'
    assert lines[3] == 'not found in another project'
    assert lines[4].startswith('ACTIVE [')
    # The order's history, one line a run, then the project's one order.
    history = [line.split(' ', 4) for line in lines[5:-1]]
    assert [run[:2] + run[3:4] for run in history
            if run[0] == 'process_type_order'] == [
        ['process_type_order', '1', 'retry'],
        ['process_type_order', '2', 'done']]
    assert {run[0] for run in history} == {'process_type_order',
                                           'check_certificate_status'}
    assert lines[-1].startswith(order_id)
    return order_id, request_id


def _first_run_delay(database, order_id):
    """Seconds from the order's creation to its first step's first run,
    both by the database's clock."""
    orders = api.OrderAPI(database, config.make_conf())
    order = orders.get(order_id, all_projects=True)
    first = min(run.started_at
                for run in orders.history(order_id, all_projects=True))
    return (first - order.created_at).total_seconds()


def test_the_first_example_of_the_api_guide_runs_as_printed(tmp_path):
    """On fake:// and SQLite, every option at its default: the cast of
    the first step reaches the in-process worker at once (not after the
    retry daemon's dispatch deadline of 300 s)."""
    ini, example = _guide()
    assert _SERVE_LINE in example
    lines = _run_example(tmp_path, ini, example)
    order_id, _ = _check_output(lines)
    database = db_session.Database.from_url(
        'sqlite:///%s' % (tmp_path / 'example.sqlite'))
    try:
        assert _first_run_delay(database, order_id) < 10
    finally:
        database.dispose()


def _without_local_serve(example):
    """The example as doc/api.md says a deployment runs it: the ``with
    local.serve(...)`` line left out and its block unindented."""
    before, block = example.split(_SERVE_LINE)
    body, _, after = block.partition('\norders.close()')
    return before + textwrap.dedent(body) + '\norders.close()' + after


def test_the_example_of_the_api_guide_runs_against_a_deployment(
        deployment, database):
    """With the daemons' and the example's options at their defaults."""
    _, example = _guide()
    cluster = deployment({})
    workers = cluster.start('barbican-worker', 'worker')
    retry = cluster.start('barbican-retry', 'retry')
    workers.wait_for_log('serving topic')
    retry.wait_for_log('Retry scheduler started')
    directory = pathlib.Path(cluster.directory) / 'service'
    directory.mkdir()
    lines = _run_example(directory, pathlib.Path(cluster.config).read_text(),
                         _without_local_serve(example),
                         env=dict(os.environ, **cluster.env))
    order_id, request_id = _check_output(lines)
    assert _first_run_delay(database, order_id) < 10
    shown = json.loads(processes.manage(
        cluster.config, 'order', 'show', order_id[:8], '-f', 'json',
        env=cluster.env).stdout)
    assert (shown['id'], shown['project_id'], shown['request_id'],
            shown['global_request_id'], shown['idempotency_key']) == (
        order_id, '6d3c3ff4ba9f4d8e9ff3a10b0a1f0c55', request_id,
        'req-6c1e9fd4-2f43-4bd3-9a8e-3f3f0e5c1d2b', 'cert-request-42')


def test_order_create_with_a_key_twice_makes_one_order(deployment):
    cluster = deployment({})
    create = ('order', 'create', '--type', 'certificate', '--project', 'p',
              '--idempotency-key', 'cli-key')
    [first] = cluster.manage_json(*create)
    [again] = cluster.manage_json(*create)
    assert again['id'] == first['id'] and first['project_id'] == 'p'
    refused = processes.manage(cluster.config, *create, '--count', '2',
                               check=False, env=cluster.env)
    assert refused.returncode != 0
    assert '--idempotency-key' in refused.stderr
    listed = cluster.manage_json('order', 'list', '--project', 'p')
    assert [order['id'] for order in listed] == [first['id']]
