"""``barbican-retry-manage retry …``: inspect and act on retry tasks."""

from scheduler import liveness
from scheduler.manage import base
from scheduler.manage import display
from scheduler import pass_lock
from worker.db import models

TASK_COLUMNS = ('id', 'order_id', 'retry_task', 'retry_at', 'retry_args',
                'retry_kwargs', 'retry_count', 'parked', 'park_reason',
                'created_at')


class _OneTask:
    """Mixin: the ``task_id`` argument and its lookup."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('task_id', type=int, help='Retry task id.')
        return parser

    def _get(self, session, task_id):
        task = self.app.database.queries.retry_tasks.get(session, task_id)
        if task is None:
            raise LookupError('no retry task %d' % task_id)
        return task


class ListRetries(base.Lister):
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
            tasks = database.repositories.retry_tasks.list_tasks(
                session, parked=parsed_args.parked)
        columns = ('id', 'order_id', 'retry_task', 'retry_at', 'retry_count')
        if parsed_args.parked:
            columns += ('park_reason',)
        return columns, [display.row(task, columns) for task in tasks]


class ShowRetry(_OneTask, base.ShowOne):
    """Show one retry task."""

    def take_action(self, parsed_args):
        with self.app.database.session() as session:
            task = self._get(session, parsed_args.task_id)
        return TASK_COLUMNS, display.row(task, TASK_COLUMNS)


class RequeueRetry(_OneTask, base.Command):
    """Make a retry task due now (a parked one too: fix its cause first)."""

    def take_action(self, parsed_args):
        database = self.app.database
        with database.session() as session, session.begin():
            self._get(session, parsed_args.task_id)
            database.queries.retry_tasks.requeue(
                session, parsed_args.task_id, self.app.now())
        self.write('retry task %d is due now; the next pass '
                   'casts it\n' % parsed_args.task_id)


class ExplainRetry(_OneTask, base.ShowOne):
    """Say why a retry task has not fired yet."""

    def take_action(self, parsed_args):
        cutoffs = liveness.Cutoffs.at(self.app.now(), self.app.conf)
        now = cutoffs.now
        database = self.app.database
        repositories = database.repositories
        with database.session() as session:
            task = self._get(session, parsed_args.task_id)
            lock = pass_lock.judge(session, repositories, cutoffs)
            rows = repositories.services.list_services(session,
                                                       models.SCHEDULER)
        daemons = [d for d in rows if cutoffs.is_alive(d.heartbeat_at)]
        next_passes = [d.next_pass_at for d in daemons if d.next_pass_at]
        if task.parked:
            why = 'set aside, never cast until requeued: %s' % (
                task.park_reason)
        elif task.retry_at > now:
            why = 'not due until %s' % display.value(task.retry_at)
        elif not daemons:
            why = 'due, but no barbican-retry daemon is alive'
        elif lock.stale:
            why = ('due; the lock of %s is stale (%s) and will be cleared '
                   'by the next pass' % (lock.holder, lock.stale_reason))
        else:
            why = 'due; the next pass casts it'
        columns = ('id', 'order_id', 'retry_task', 'retry_at', 'parked',
                   'park_reason', 'live_retry_daemons', 'next_pass_at',
                   'lock_holder', 'lock_taken_at', 'why')
        return columns, (
            task.id, task.order_id, task.retry_task,
            display.value(task.retry_at), task.parked, task.park_reason,
            len(daemons),
            display.value(min(next_passes)) if next_passes else None,
            lock.holder, display.value(lock.taken_at), why)
