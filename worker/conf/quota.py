"""The ``[quota]`` group: per-project bounds of what is PENDING.

Read at each create (``worker.api``), so a SIGHUP applies a change to
the processes that reload their configuration. The admin's override of
one project (``/v1/project-quotas/{project_id}``, ``QuotaAPI``) wins
over the default.
"""

from oslo_config import cfg

from worker.conf import groups

quota_group = cfg.OptGroup(
    'quota', title='Per-project quotas',
    help='Bounds that keep one project from filling what every project '
         'shares. A create beyond one is refused (TooManyPendingOrders in '
         'worker.api, HTTP 429 in the REST API) and writes nothing.')

quota_opts = [
    cfg.IntOpt('pending_orders_per_project',
               default=-1, min=-1, max=2 ** 31 - 1, mutable=True,
               help='Most orders one project may have PENDING at once; -1 '
                    'for no bound (the default), 0 to refuse every create. '
                    'An admin\'s override of one project wins over it. '
                    'Counted in the create\'s transaction: exact under '
                    'concurrent creators.'),
]


def register_opts(conf):
    """Register the ``[quota]`` options."""
    groups.register_group_opts(conf, quota_group, quota_opts)


def list_opts():
    """Return the options of this module for the sample config."""
    return {quota_group: quota_opts}
