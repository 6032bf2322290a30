"""``worker.local.serve``: a worker and a retry daemon in this process.

On an embedded SQLite file and oslo.messaging's in-process ``fake://``
transport, on a ``ConfigOpts`` of the test's own: no server.
"""

import threading

from oslo_config import cfg
import pytest

from worker import api
from worker.db import services
from worker import local


def _orders(tmp_path, **groups):
    path = tmp_path / 'local.conf'
    sections = {'DEFAULT': {'transport_url': 'fake://'},
                'database': {'connection': 'sqlite:///%s'
                             % (tmp_path / 'local.sqlite')},
                'simple_certificate': {'delay_before_update_seconds': 0}}
    for group, values in groups.items():
        sections.setdefault(group, {}).update(values)
    path.write_text(''.join(
        '[%s]\n%s\n' % (group, ''.join('%s = %s\n' % item
                                       for item in values.items()))
        for group, values in sections.items()))
    conf = cfg.ConfigOpts()
    conf(['--config-file', str(path)], project='barbican-retry',
         default_config_files=[])
    return api.OrderAPI.from_config(conf)


def test_an_order_runs_on_the_api_s_own_transport_and_database(tmp_path):
    orders = _orders(tmp_path)
    before = set(threading.enumerate())
    try:
        with local.serve(orders, upgrade_database=True) as served:
            assert served is orders
            order = orders.create('certificate', {}, project_id='dev')
            done = orders.wait(order.id, timeout=60, project_id='dev')
            assert done.status == api.ACTIVE
            with orders._database.session() as session:
                assert services.list_services(session)
        # Stopped: their heartbeats removed, their threads gone.
        with orders._database.session() as session:
            assert services.list_services(session) == []
        assert not [thread for thread in threading.enumerate()
                    if thread not in before and not thread.daemon]
    finally:
        orders.close()


def test_the_daemons_stop_when_the_block_raises(tmp_path):
    orders = _orders(tmp_path)
    try:
        with pytest.raises(KeyError):
            with local.serve(orders, upgrade_database=True):
                raise KeyError('the caller failed')
        with orders._database.session() as session:
            assert services.list_services(session) == []
    finally:
        orders.close()


def test_inconsistent_scheduler_options_are_refused_by_name(tmp_path):
    orders = _orders(tmp_path, scheduler={'retry_lock_timeout_seconds': 30,
                                          'max_pass_seconds': 60})
    try:
        with pytest.raises(ValueError, match='retry_lock_timeout_seconds'):
            with local.serve(orders, upgrade_database=True):
                pass
    finally:
        orders.close()


def test_an_api_without_a_transport_is_refused(tmp_path):
    orders = _orders(tmp_path)
    built = api.OrderAPI(orders._database, orders._conf)
    try:
        with pytest.raises(ValueError, match='from_config'):
            with local.serve(built):
                pass
    finally:
        orders.close()
