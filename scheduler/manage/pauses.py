"""``barbican-retry-manage … pause|unpause`` and ``pause list``: pause an
order type, a topic, a resource key, an order or a schedule, through
``worker.api.OrderAPI.pause`` as a service would (doc/operations.md,
"Pausing and resuming").

Each command prints the pause: ``target``, ``name``, whether it is
``paused`` now, its ``reason`` and since when (``created_at``). An
unpause of what was not paused prints ``paused`` False and changes
nothing.
"""

from scheduler.manage import base
from scheduler.manage import display
from scheduler.manage import orders
from scheduler.manage import schedules

COLUMNS = ('target', 'name', 'paused', 'reason', 'created_at',
           'project_id')
LIST_COLUMNS = ('target', 'name', 'reason', 'created_at', 'project_id')


def _shown(pause, target, name, paused):
    """The row of ``COLUMNS`` of ``pause`` (None: what was not paused)."""
    if pause is None:
        return (target, name, False, None, None, None)
    return (pause.target, pause.name, paused) + display.row(
        pause, COLUMNS[3:])


class _Pause(base.ShowOne):
    """Pause one thing of ``target``; a subclass names the target and
    its argument."""

    target = ''
    argument = ''
    help_text = ''

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(self.argument, help=self.help_text)
        parser.add_argument('--reason',
                            help='Why (at most 255 characters), shown by '
                                 '"pause list" and "order explain".')
        return parser

    def name_of(self, given):
        """The name the API is given for ``given``."""
        return given

    def take_action(self, parsed_args):
        name = self.name_of(getattr(parsed_args, self.argument))
        pause = orders.order_api(self.app, casts=True).pause(
            self.target, name, reason=parsed_args.reason)
        return COLUMNS, _shown(pause, self.target, name, True)


class _Unpause(_Pause):
    """Lift the pause of one thing of ``target``; the steps it held are
    cast at once."""

    def get_parser(self, prog_name):
        parser = super(_Pause, self).get_parser(prog_name)
        parser.add_argument(self.argument, help=self.help_text)
        return parser

    def take_action(self, parsed_args):
        name = self.name_of(getattr(parsed_args, self.argument))
        lifted = orders.order_api(self.app, casts=True).unpause(
            self.target, name)
        return COLUMNS, _shown(lifted, self.target, name, False)


class _OrderType:
    target, argument, help_text = 'order_type', 'type', 'Order type.'


class _Topic:
    target, argument, help_text = ('topic', 'name',
                                   'RPC topic ([order_type:T] topic).')


class _Resource:
    target, argument, help_text = 'resource', 'key', 'Resource key.'


class _Order:
    target, argument, help_text = ('order', 'order_id',
                                   'Order id (or a unique prefix).')

    def name_of(self, given):
        return orders.order_api(self.app).find(given,
                                               all_projects=True).id


class _Schedule:
    target, argument, help_text = 'schedule', 'schedule_id', 'Schedule id.'

    def name_of(self, given):
        # Looked up first: the API does not (it is below schedules).
        return schedules.schedules_api(self.app).get(
            given, all_projects=True).id


class PauseOrderType(_OrderType, _Pause):
    """Pause an order type: none of its steps is claimed until unpaused;
    those running finish."""


class UnpauseOrderType(_OrderType, _Unpause):
    """Unpause an order type; its waiting steps are cast at once."""


class PauseTopic(_Topic, _Pause):
    """Pause a topic: the steps of every order type cast to it wait."""


class UnpauseTopic(_Topic, _Unpause):
    """Unpause a topic; its waiting steps are cast at once."""


class PauseResource(_Resource, _Pause):
    """Pause a resource key: every step that needs it waits."""


class UnpauseResource(_Resource, _Unpause):
    """Unpause a resource key; its waiting steps are cast at once."""


class PauseOrder(_Order, _Pause):
    """Pause one order: its steps wait (an order.paused event)."""


class UnpauseOrder(_Order, _Unpause):
    """Unpause one order; its waiting steps are cast at once."""


class PauseSchedule(_Schedule, _Pause):
    """Pause a schedule: its ticks make no order until unpaused (those
    missed meanwhile are not made up for)."""


class UnpauseSchedule(_Schedule, _Unpause):
    """Unpause a schedule: its next tick makes its order."""


class ListPauses(base.Lister):
    """List what is paused, oldest first."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--target', choices=(
            'order_type', 'topic', 'resource', 'order', 'schedule'),
            help='Only the pauses of this target.')
        return parser

    def take_action(self, parsed_args):
        found = orders.order_api(self.app).pauses(target=parsed_args.target)
        return LIST_COLUMNS, [display.row(pause, LIST_COLUMNS)
                              for pause in found]
