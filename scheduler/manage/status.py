"""``barbican-retry-manage status``: the deployment on one screen."""

import json

import prettytable

from scheduler.manage import base
from scheduler.manage import display
from scheduler.manage import overview as overview_module
from worker.db import models


def _ago(now, moment):
    """``moment`` relative to ``now``, as an operator reads it."""
    if moment is None:
        return '-'
    seconds = (now - moment).total_seconds()
    if seconds >= 0:
        return '%s ago' % _duration(seconds)
    return 'in %s' % _duration(-seconds)


def _duration(seconds):
    if seconds < 60:
        return '%.1fs' % seconds
    minutes, seconds = divmod(int(seconds), 60)
    if minutes < 60:
        return '%dm %02ds' % (minutes, seconds)
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return '%dh %02dm' % (hours, minutes)
    return '%dd %02dh' % divmod(hours, 24)


def _offset(process):
    if process.clock_offset is None:
        return '-'
    return '%+.1fs' % process.clock_offset


def _lock_line(now, lock):
    if not lock.held:
        return 'not held'
    line = 'held by %s since %s (%s)' % (
        display.escape(lock.holder), display.value(lock.taken_at),
        _ago(now, lock.taken_at))
    if lock.stale:
        line += '; stale: %s; the next pass clears it' % display.escape(
            lock.stale_reason)
    return line


def _table(columns, rows):
    table = prettytable.PrettyTable(columns)
    table.align = 'l'
    for row in rows:
        # Names come from the processes' rows: a line break in one must
        # not make a line of the table.
        table.add_row(display.escaped_row(row))
    return table.get_string()


def render_text(overview):
    """The screen, as lines of text."""
    now = overview.now
    lines = ['barbican-retry status at %s UTC' % display.value(now), '']
    daemons = [p for p in overview.processes
               if p.kind == models.SCHEDULER]
    workers = [p for p in overview.processes if p.kind == models.WORKER]
    lines.append('Retry daemons: %d alive' % len(
        overview.alive(models.SCHEDULER)))
    if daemons:
        lines.append(_table(
            ('name', 'alive', 'heartbeat', 'last pass', 'next pass',
             'clock offset'),
            [(p.name, 'yes' if p.alive else 'NO',
              _ago(now, p.heartbeat_at), _ago(now, p.last_pass_at),
              _ago(now, p.next_pass_at), _offset(p)) for p in daemons]))
    lines.append('Workers: %d alive' % len(overview.alive(models.WORKER)))
    if workers:
        lines.append(_table(
            ('name', 'alive', 'heartbeat', 'started', 'clock offset'),
            [(p.name, 'yes' if p.alive else 'NO',
              _ago(now, p.heartbeat_at), _ago(now, p.started_at),
              _offset(p)) for p in workers]))
    rows = overview.retry_rows
    lines += [
        '',
        'Lock: %s' % _lock_line(now, overview.lock),
        'Retry rows: %d due now, %d later, %d parked' % (
            rows.due_now, rows.later, rows.parked),
        'Orders: %s' % ', '.join('%s %d' % item
                                 for item in overview.orders.items()),
    ]
    pending = overview.oldest_pending
    if pending is None:
        lines.append('Oldest PENDING order: none')
    else:
        lines += ['Oldest PENDING order: %s (%s, created %s ago)' % (
            pending.id, display.escape(pending.type),
            _duration(pending.age_seconds)),
            '  ' + display.escape(pending.explanation)]
    return lines


def as_json(overview):
    """The screen as one JSON-ready dict, for scripts."""
    def moment(value):
        return None if value is None else display.value(value)

    lock = overview.lock
    pending = overview.oldest_pending
    return {
        'time': moment(overview.now),
        'retry_daemons_alive': len(overview.alive(models.SCHEDULER)),
        'workers_alive': len(overview.alive(models.WORKER)),
        'processes': [{
            'name': p.name, 'kind': p.kind, 'host': p.host, 'pid': p.pid,
            'alive': p.alive, 'started_at': moment(p.started_at),
            'heartbeat_at': moment(p.heartbeat_at),
            'heartbeat_age_seconds': round(
                (overview.now - p.heartbeat_at).total_seconds(), 3),
            'last_pass_at': moment(p.last_pass_at),
            'next_pass_at': moment(p.next_pass_at),
            'clock_offset_seconds': p.clock_offset,
        } for p in overview.processes],
        'lock': {'held': lock.held, 'holder': lock.holder,
                 'taken_at': moment(lock.taken_at), 'stale': lock.stale,
                 'stale_reason': lock.stale_reason},
        'retry_rows': {'due_now': overview.retry_rows.due_now,
                       'later': overview.retry_rows.later,
                       'parked': overview.retry_rows.parked},
        'orders': dict(overview.orders),
        'oldest_pending': None if pending is None else {
            'id': pending.id, 'type': pending.type,
            'created_at': moment(pending.created_at),
            'age_seconds': round(pending.age_seconds, 3),
            'explanation': pending.explanation},
    }


class Status(base.Command):
    """Show the deployment on one screen: processes alive, the lock, retry
    rows, orders by status, and the oldest PENDING order explained."""

    def get_parser(self, prog_name):
        """Add ``-f table|json``."""
        parser = super().get_parser(prog_name)
        parser.add_argument('-f', '--format', choices=('table', 'json'),
                            default='table',
                            help='table (default) for people, json for '
                                 'scripts.')
        return parser

    def take_action(self, parsed_args):
        """Read the overview and print it."""
        overview = overview_module.take(self.app.database, self.app.conf,
                                        self.app.now())
        if parsed_args.format == 'json':
            json.dump(as_json(overview), self.app.stdout, indent=2)
            self.app.stdout.write('\n')
        else:
            self.write('\n'.join(render_text(overview)) + '\n')
