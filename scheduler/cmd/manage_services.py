"""``barbican-retry-manage service …``: the processes and their heartbeats."""

from cliff import lister
from oslo_utils import timeutils

from scheduler.cmd import display
from worker.db import services
from worker import liveness


class ListServices(lister.Lister):
    """List barbican-worker and barbican-retry processes, live or dead."""

    def take_action(self, parsed_args):
        database = self.app.database
        with database.session() as session:
            rows = services.list_services(session)
        now = timeutils.utcnow()
        down_time = self.app.conf.service_down_time
        columns = ('name', 'kind', 'host', 'pid', 'started_at',
                   'heartbeat_at')
        return (columns + ('alive',),
                [display.row(row, columns) +
                 (liveness.is_alive(row.heartbeat_at, now, down_time),)
                 for row in rows])
