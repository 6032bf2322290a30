"""``barbican-retry-manage db …``: schema migrations."""

from cliff import command
from cliff import show

from worker.db import migration


class Upgrade(command.Command):
    """Upgrade the database schema (to the latest revision by default)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--revision', default='head',
                            help='Target revision (default: head).')
        return parser

    def take_action(self, parsed_args):
        # The one command that may create the SQLite file.
        database = self.app.open_database(create=True, migrated=False)
        migration.upgrade(database.engine, parsed_args.revision)
        self.app.stdout.write('database at revision %s\n' %
                              migration.current_revision(database.engine))


class Current(show.ShowOne):
    """Show the schema revision of the database and the latest one."""

    def take_action(self, parsed_args):
        current = migration.current_revision(
            self.app.open_database(migrated=False).engine)
        heads = migration.head_revisions()
        return (('current', 'head', 'up_to_date'),
                (current, ','.join(heads), current in heads))
