"""``barbican-retry-manage lock …``: inspect the OrderRetryTask lock."""

from cliff import show
from oslo_utils import timeutils

from scheduler.cmd import display

from worker.db import locks
from worker.db import models


class ShowLock(show.ShowOne):
    """Show who holds the OrderRetryTask lock, and since when."""

    def take_action(self, parsed_args):
        database = self.app.database
        with database.session() as session:
            lock = locks.get(session, models.ORDER_RETRY_TASK_LOCK)
        columns = ('entity_to_lock', 'held', 'worker_host_name',
                   'created_at', 'age_seconds')
        if lock is None:
            return columns, (models.ORDER_RETRY_TASK_LOCK, False, None,
                             None, None)
        age = (timeutils.utcnow() - lock.created_at).total_seconds()
        return columns, (lock.entity_to_lock, True, lock.worker_host_name,
                         display.value(lock.created_at), round(age, 3))
