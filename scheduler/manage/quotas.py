"""``barbican-retry-manage quota …``: the projects' quotas of PENDING
orders (``[quota] pending_orders_per_project`` and the overrides of it),
through ``worker.api.QuotaAPI`` as the REST API's
``/v1/project-quotas``."""

from scheduler.manage import base
from scheduler.manage import display
from worker import api

COLUMNS = ('project_id', 'pending_orders', 'override', 'default')


def quotas_api(app):
    """An ``api.QuotaAPI`` on the app's database and configuration."""
    return api.QuotaAPI(app.database, app.conf, app.now)


class _OneProject:
    """Mixin: the ``project_id`` argument."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('project_id', help='Project id.')
        return parser


class ListQuotas(base.Lister):
    """List the projects whose quota was overridden."""

    def take_action(self, parsed_args):
        return COLUMNS, [display.row(quota, COLUMNS)
                         for quota in quotas_api(self.app).list()]


class ShowQuota(_OneProject, base.ShowOne):
    """Show a project's quota: the bound its creates meet (-1: none), its
    override and the default."""

    def take_action(self, parsed_args):
        return COLUMNS, display.row(
            quotas_api(self.app).get(parsed_args.project_id), COLUMNS)


class SetQuota(_OneProject, base.ShowOne):
    """Override a project's quota of PENDING orders."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--pending-orders', type=int, required=True,
                            help='Most orders the project may have PENDING '
                                 'at once; -1 for no bound, 0 to refuse '
                                 'every create.')
        return parser

    def take_action(self, parsed_args):
        return COLUMNS, display.row(quotas_api(self.app).set(
            parsed_args.project_id, parsed_args.pending_orders), COLUMNS)


class DeleteQuota(_OneProject, base.ShowOne):
    """Drop a project's override: ``[quota] pending_orders_per_project``
    applies again."""

    def take_action(self, parsed_args):
        return COLUMNS, display.row(
            quotas_api(self.app).delete(parsed_args.project_id), COLUMNS)
