"""``barbican-retry-manage lock …``: the OrderRetryTask lock."""

import sys

from scheduler import liveness
from scheduler.manage import base
from scheduler.manage import display
from scheduler import pass_lock

LOCK = pass_lock.LOCK


class ShowLock(base.ShowOne):
    """Show who holds the OrderRetryTask lock, since when, and whether it
    is stale (by the rule the daemons clear it by)."""

    def take_action(self, parsed_args):
        database = self.app.database
        cutoffs = liveness.Cutoffs.at(self.app.now(), self.app.conf)
        with database.session() as session:
            lock = pass_lock.judge(session, database.repositories, cutoffs)
        columns = ('entity_to_lock', 'held', 'worker_host_name',
                   'created_at', 'age_seconds', 'stale', 'stale_reason')
        if not lock.held:
            return columns, (LOCK, False, None, None, None, False, None)
        age = (cutoffs.now - lock.taken_at).total_seconds()
        return columns, (LOCK, True, lock.holder,
                         display.value(lock.taken_at), round(age, 3),
                         lock.stale, lock.stale_reason)


class ReleaseLock(base.Command):
    """Delete the OrderRetryTask lock, whoever holds it."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--force', action='store_true', required=True,
                            help='Required: releasing a live daemon\'s '
                                 'lock lets another pass start beside it.')
        return parser

    def take_action(self, parsed_args):
        sys.stderr.write(
            'WARNING: releasing the lock of a daemon that is still passing '
            'lets a second pass run beside it; its rows may be cast twice '
            '(the workers drop the duplicates). Prefer waiting for '
            'retry_lock_timeout_seconds.\n')
        database = self.app.database
        with database.session() as session, session.begin():
            released = database.repositories.locks.force_release(session,
                                                                 LOCK)
        self.write('lock released\n' if released
                   else 'lock was not held\n')
