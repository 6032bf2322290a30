"""``barbican-retry-manage service …``: the processes and their heartbeats."""

from cliff import lister
from oslo_utils import timeutils

from scheduler.cmd import display
from scheduler import liveness
from worker.db import services


class ListServices(lister.Lister):
    """List barbican-worker and barbican-retry processes, live or dead."""

    def take_action(self, parsed_args):
        database = self.app.database
        with database.session() as session:
            rows = services.list_services(session)
        cutoffs = liveness.Cutoffs.at(timeutils.utcnow(), self.app.conf)
        columns = ('name', 'kind', 'host', 'pid', 'started_at',
                   'heartbeat_at')
        return (columns + ('alive',),
                [display.row(row, columns) +
                 (cutoffs.is_alive(row.heartbeat_at),)
                 for row in rows])
