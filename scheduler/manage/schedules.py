"""``barbican-retry-manage schedule …``: periodic orders.

A schedule creates an order of its type every interval or at the times of
a cron expression (in its time zone, UTC by default); the retry daemons
create each tick's order once (``scheduler.ticks``). Through
``worker.api.schedules`` only, as a service would.
"""

import argparse

from scheduler.manage import arguments
from scheduler.manage import base
from scheduler.manage import display
from scheduler.manage import orders
from worker import api
from worker.api import schedules as schedule_api

COLUMNS = ('id', 'type', 'project_id', 'priority', 'every_seconds', 'cron',
           'meta', 'next_tick_at', 'last_tick_at', 'last_order_id',
           'created_at', 'updated_at', 'timezone', 'overlap',
           'buffered_tick_at')
LIST_COLUMNS = ('id', 'type', 'project_id', 'every_seconds', 'cron',
                'next_tick_at', 'last_order_id', 'timezone', 'overlap')


def duration(text):
    """An argparse type: ``30s``, ``5m``, ``1h``, ``30d`` as seconds."""
    try:
        return schedule_api.parse_duration(text)
    except schedule_api.InvalidSchedule as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def schedules_api(app, casts=False):
    """A ``schedule_api.ScheduleAPI`` on the app's database and
    configuration; it casts nothing (the retry daemons create the
    orders) unless ``casts`` (a trigger's order), as ``order create``."""
    return schedule_api.ScheduleAPI(app.database, app.conf,
                                    orders=orders.order_api(app, casts))


class _OneSchedule:
    """Mixin: the ``schedule_id`` argument."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('schedule_id', help='Schedule id.')
        return parser


class CreateSchedule(base.ShowOne):
    """Create a schedule of orders: one every interval, or at the times
    of a cron expression in a time zone (UTC by default).

    The type, meta, project and priority are checked as ``order create``
    checks them. The first tick is one interval from now, or the cron
    expression's next time; the retry daemons create each tick's order
    once, and of the ticks missed while none ran, the orders of the
    latest [scheduler] schedule_backfill_max_runs (1 by default). On the
    day clocks spring forward, a time that does not exist runs once, an
    hour later (02:30 at 03:30); on the day they fall back, a time that
    happens twice runs once, the first time.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--type', required=True,
                            help='Order type (see "order type list").')
        parser.add_argument('--meta', default={}, type=arguments.meta_json,
                            metavar='JSON|@FILE',
                            help='Each order\'s metadata as a JSON object, '
                                 'or @FILE to read it from FILE (@- from '
                                 'stdin); its type\'s meta_schema must '
                                 'accept it.')
        when = parser.add_mutually_exclusive_group(required=True)
        when.add_argument('--every', type=duration, metavar='DURATION',
                          help='An order every DURATION: an integer and '
                               's, m, h or d, such as 30s, 5m, 1h, 30d '
                               '(1 second to %d days).'
                               % (schedule_api.MAX_EVERY_SECONDS // 86400))
        when.add_argument('--cron', metavar='EXPR',
                          help='An order at the times of this five-field '
                               'cron expression, such as "0 3 * * *", in '
                               'the --timezone.')
        parser.add_argument('--timezone', metavar='ZONE',
                            default=schedule_api.DEFAULT_TIMEZONE,
                            help='The IANA time zone the --cron times are '
                                 'in, such as Europe/Paris (default UTC; '
                                 'an --every interval takes UTC only).')
        parser.add_argument('--overlap',
                            choices=schedule_api.OVERLAP_POLICIES,
                            default=schedule_api.DEFAULT_OVERLAP,
                            help='What a tick does while the schedule\'s '
                                 'last order is still open: allow (the '
                                 'default) creates its order beside it, '
                                 'skip creates none, cancel-previous '
                                 'cancels the open order and creates, '
                                 'buffer-one creates it once the open '
                                 'order ends (the latest tick held, one '
                                 'at most).')
        parser.add_argument('--project', default=api.DEFAULT_PROJECT,
                            help='The project that owns the orders '
                                 '(default %r).' % api.DEFAULT_PROJECT)
        parser.add_argument('--priority', type=arguments.priority, default=0,
                            help='The orders\' priority, %d to %d (default '
                                 '0).' % (api.MIN_PRIORITY,
                                          api.MAX_PRIORITY))
        return parser

    def take_action(self, parsed_args):
        schedule = schedules_api(self.app).create(
            parsed_args.type, parsed_args.meta,
            project_id=parsed_args.project, every=parsed_args.every,
            cron=parsed_args.cron, priority=parsed_args.priority,
            timezone=parsed_args.timezone, overlap=parsed_args.overlap)
        return COLUMNS, display.row(schedule, COLUMNS)


class ListSchedules(base.Lister):
    """List the schedules, oldest first."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--project',
                            help='Only the schedules of this project.')
        return parser

    def take_action(self, parsed_args):
        found = schedules_api(self.app).list(
            **orders.projects(parsed_args.project))
        return LIST_COLUMNS, [display.row(schedule, LIST_COLUMNS)
                              for schedule in found]


class ShowSchedule(_OneSchedule, base.ShowOne):
    """Show a schedule: its next tick, last tick and last order."""

    def take_action(self, parsed_args):
        schedule = schedules_api(self.app).get(parsed_args.schedule_id,
                                               all_projects=True)
        return COLUMNS, display.row(schedule, COLUMNS)


class DeleteSchedule(_OneSchedule, base.Command):
    """Delete a schedule: it creates no more orders; those it created
    stay."""

    def take_action(self, parsed_args):
        schedules_api(self.app).delete(parsed_args.schedule_id,
                                       all_projects=True)
        self.write('schedule %s deleted\n' % parsed_args.schedule_id)


class TriggerSchedule(_OneSchedule, base.ShowOne):
    """Create an order of a schedule now, outside its ticks: its next
    tick stays as it was.

    The order is checked and cast as "order create" does; it becomes the
    schedule's last order, which the next tick's overlap policy sees.
    """

    def take_action(self, parsed_args):
        order = schedules_api(self.app, casts=True).trigger(
            parsed_args.schedule_id, all_projects=True)
        return orders.ORDER_COLUMNS, display.row(order, orders.ORDER_COLUMNS)
