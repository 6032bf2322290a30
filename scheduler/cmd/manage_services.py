"""``barbican-retry-manage service …``: the processes and their heartbeats."""

import datetime

from cliff import lister
from oslo_utils import timeutils

from scheduler.cmd import display
from worker.db import services


class ListServices(lister.Lister):
    """List barbican-worker and barbican-retry processes, live or dead."""

    def take_action(self, parsed_args):
        database = self.app.database
        with database.session() as session:
            rows = services.list_services(session)
        alive_since = timeutils.utcnow() - datetime.timedelta(
            seconds=self.app.conf.service_down_time)
        columns = ('name', 'kind', 'host', 'pid', 'started_at',
                   'heartbeat_at')
        return (columns + ('alive',),
                [display.row(row, columns) + (row.heartbeat_at >= alive_since,)
                 for row in rows])
