"""``barbican-retry-manage service …``: the processes and their heartbeats."""

from scheduler import liveness
from scheduler.manage import base
from scheduler.manage import display


class ListServices(base.Lister):
    """List barbican-worker and barbican-retry processes, live or dead."""

    def take_action(self, parsed_args):
        database = self.app.database
        with database.session() as session:
            rows = database.repositories.services.list_services(session)
        cutoffs = liveness.Cutoffs.at(self.app.now(), self.app.conf)
        columns = ('name', 'kind', 'host', 'pid', 'started_at',
                   'heartbeat_at', 'topic')
        # topic: the RPC topic a worker serves (barbican-worker --topic).
        # clock_offset_seconds: the database's clock minus the process's
        # host's, at its last heartbeat (worker.common.clock).
        return (columns + ('alive', 'clock_offset_seconds'),
                [display.row(row, columns) +
                 (cutoffs.is_alive(row.heartbeat_at),
                  _rounded(row.clock_offset))
                 for row in rows])


def _rounded(offset):
    return None if offset is None else round(offset, 3)
