"""A worker and a retry daemon in this process, for local development.

``serve`` runs what a deployment runs as ``barbican-worker`` and
``barbican-retry`` beside the caller's code, for the length of a ``with``
block, on the transport and database of an ``OrderAPI``::

    from oslo_config import cfg
    from worker import api
    from worker import local

    conf = cfg.ConfigOpts()
    conf(['--config-file', 'barbican-retry.conf'], project='barbican-retry')
    orders = api.OrderAPI.from_config(conf)
    with local.serve(orders, upgrade_database=True):
        order = orders.create('certificate', {}, project_id='me')
        orders.wait(order.id, timeout=60, project_id='me')
    orders.close()

Any transport works, ``fake://`` included: oslo.messaging's in-process
transport delivers only within one transport object, which the worker,
the retry daemon and the ``OrderAPI`` share here. With a SQLite file and
``fake://`` nothing else needs installing or running. In a deployment the
same code runs without the ``with`` block: the daemons run as services.

Like the all-in-one demo, this module runs both sides in one process (the
named exception of ``tests/unit/test_boundaries.py``).
"""

import contextlib

from oslo_log import log as logging

from scheduler import conf as scheduler_conf
from scheduler import service as scheduler_service
from worker.db import migration
from worker import service as worker_service

LOG = logging.getLogger(__name__)

__all__ = ['serve']


@contextlib.contextmanager
def serve(orders, *, upgrade_database=False):
    """Run a worker and a retry daemon on ``orders``' configuration,
    database and transport until the ``with`` block ends.

    :param orders: a ``worker.api.OrderAPI`` from ``from_config``; its
        ``ConfigOpts`` gets the retry daemon's options registered (their
        values are read from the files it parsed).
    :param upgrade_database: first create or upgrade the schema, as
        ``barbican-retry-manage db upgrade`` does (a new SQLite file
        needs it).
    :raises ValueError: the ``[scheduler]`` options are inconsistent; the
        message names them.

    The daemons stop when the block ends, whether it raised or not: the
    steps running finish first.
    """
    # NOTE: the OrderAPI's own parts, not public attributes: this is the
    # one helper that shares them (tests/unit/worker/test_local.py).
    conf, transport = orders._conf, orders._transport
    if transport is None:
        raise ValueError('serve() needs an OrderAPI built by from_config, '
                         'which owns a transport to share')
    scheduler_conf.register_opts(conf)
    scheduler_conf.validate(conf)
    if upgrade_database:
        migration.upgrade(orders._database.engine)
    services = [worker_service.WorkerService(conf, transport),
                scheduler_service.SchedulerService(conf, transport)]
    started = []
    try:
        for service in services:
            # Stopped even if its start() fails half-way: the timers it
            # started first would keep this process alive.
            started.append(service)
            service.start()
        LOG.info('A worker and a retry daemon run in this process')
        yield orders
    finally:
        for service in reversed(started):
            service.stop()
            service.wait()
