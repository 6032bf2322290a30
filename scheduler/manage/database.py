"""``barbican-retry-manage db …``: schema migrations, and the purge of
old finished orders."""

import argparse
import dataclasses

from scheduler.manage import base
from scheduler.manage import display
from scheduler import purge
from worker.db import migration
from worker.db import models


class Upgrade(base.Command):
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
        self.write('database at revision %s\n' %
                   migration.current_revision(database.engine))


class Current(base.ShowOne):
    """Show the schema revision of the database and the latest one."""

    def take_action(self, parsed_args):
        current = migration.current_revision(
            self.app.open_database(migrated=False).engine)
        heads = migration.head_revisions()
        return (('current', 'head', 'up_to_date'),
                (current, ','.join(heads), current in heads))


#: A hundred years: more cannot be subtracted from a date.
MAX_DAYS = 36500
#: Orders per transaction at most: a transaction of about 100,000 rows.
MAX_BATCH_SIZE = 10000


def _statuses(text):
    """An argparse type: finished statuses, separated by commas."""
    try:
        return models.check_purgeable(
            word.strip().upper() for word in text.split(',') if word.strip())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc))


def _number(kind, least, most):
    """An argparse type: a number of ``kind`` from ``least`` to ``most``.
    """
    def convert(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError('not a number: %r' % text)
        if not least <= value <= most:
            raise argparse.ArgumentTypeError('must be at least %s and at '
                                             'most %s, not %s'
                                             % (least, most, text))
        return value
    return convert


class Purge(base.ShowOne):
    """Delete finished orders last changed more than DAYS ago, and every
    row of theirs (steps and deliveries, retry rows, events, history).

    A batch of orders per short transaction, safe while workers and
    daemons run: an order resumed meanwhile is kept. PENDING and
    CANCELLING orders are never purged. Prints the rows deleted per
    table (with --dry-run, the rows it would delete).
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--older-than', metavar='DAYS', required=True,
            type=_number(float, 0, MAX_DAYS),
            help='Purge the orders whose last change (updated_at) is '
                 'older than this many days (a fraction of a day too), '
                 'by the database server\'s clock.')
        parser.add_argument(
            '--status', type=_statuses, default=models.PURGEABLE_STATUSES,
            help='Statuses to purge, separated by commas, among %s '
                 '(default: all three).'
                 % ', '.join(models.PURGEABLE_STATUSES))
        parser.add_argument(
            '--batch-size', type=_number(int, 1, MAX_BATCH_SIZE),
            default=purge.DEFAULT_BATCH_SIZE,
            help='Orders deleted per transaction (default: %d).'
                 % purge.DEFAULT_BATCH_SIZE)
        parser.add_argument(
            '--dry-run', action='store_true',
            help='Count what would be deleted; delete nothing.')
        return parser

    def take_action(self, parsed_args):
        database = self.app.database
        before = purge.cutoff(self.app.now(), parsed_args.older_than)
        if parsed_args.dry_run:
            counts = purge.count(database, parsed_args.status, before)
        else:
            counts = purge.purge(database, parsed_args.status, before,
                                 parsed_args.batch_size)
        fields = dataclasses.asdict(counts)
        return (('dry_run', 'updated_before') + tuple(fields),
                (parsed_args.dry_run, display.value(before)) +
                tuple(fields.values()))
