"""``barbican-retry-manage retry …``: inspect retry tasks."""

from cliff import lister

from scheduler.cmd import display

from worker.db import retry_tasks


class ListRetries(lister.Lister):
    """List pending retry tasks (with --parked, those set aside)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--parked', action='store_true',
                            help='List the tasks set aside as uncastable, '
                                 'with the reason.')
        return parser

    def take_action(self, parsed_args):
        database = self.app.database
        with database.session() as session:
            tasks = retry_tasks.list_tasks(session, parked=parsed_args.parked)
        columns = ('id', 'order_id', 'retry_task', 'retry_at', 'retry_count')
        if parsed_args.parked:
            columns += ('park_reason',)
        return columns, [display.row(task, columns) for task in tasks]
